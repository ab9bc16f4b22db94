"""`python -m models.efficientnet --model_dir=DIR` trains configs/efficientnet/default.gin."""

from models.core.start import run_family

if __name__ == "__main__":
    run_family("efficientnet")
