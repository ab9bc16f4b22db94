"""`python -m models.mnasnet --model_dir=DIR` trains configs/mnasnet/default.gin on digits."""

from models.core.start import run_family

if __name__ == "__main__":
    run_family("mnasnet")
