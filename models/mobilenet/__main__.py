"""`python -m models.mobilenet --model_dir=DIR` trains configs/mobilenet/default.gin on digits."""

from models.core.start import run_family

if __name__ == "__main__":
    run_family("mobilenet")
