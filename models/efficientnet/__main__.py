"""`python -m models.efficientnet --model_dir=DIR` trains configs/efficientnet/default.gin."""

from models.core.main import main

if __name__ == "__main__":
    main(family="efficientnet")
