"""`python -m models.inception --model_dir=DIR` trains configs/inception/default.gin on digits."""

from models.core.main import main

if __name__ == "__main__":
    main(family="inception")
