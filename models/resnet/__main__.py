"""`python -m models.resnet --model_dir=DIR` trains configs/resnet/default.gin on digits."""

from models.core.main import main

if __name__ == "__main__":
    main(family="resnet")
