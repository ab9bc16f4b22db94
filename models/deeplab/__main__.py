"""`python -m models.deeplab --model_dir=DIR` trains configs/deeplab/default.gin on the
built-in digit scenes' class masks."""

from models.core.start import run_family

if __name__ == "__main__":
    run_family("deeplab")
