"""`python -m models.resnet --model_dir=DIR` trains configs/resnet/default.gin on digits."""

from models.core.start import run_family

if __name__ == "__main__":
    run_family("resnet")
