"""`python -m models.inception --model_dir=DIR` trains configs/inception/default.gin on digits."""

from models.core.start import run_family

if __name__ == "__main__":
    run_family("inception")
