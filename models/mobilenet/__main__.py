"""`python -m models.mobilenet --model_dir=DIR` trains configs/mobilenet/default.gin on digits."""

from models.core.main import main

if __name__ == "__main__":
    main(family="mobilenet")
