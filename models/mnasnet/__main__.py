"""`python -m models.mnasnet --model_dir=DIR` trains configs/mnasnet/default.gin on digits."""

from models.core.main import main

if __name__ == "__main__":
    main(family="mnasnet")
