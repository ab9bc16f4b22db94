"""`python -m models.amoebanet --model_dir=DIR` trains configs/amoebanet/default.gin on digits."""

from models.core.start import run_family

if __name__ == "__main__":
    run_family("amoebanet")
