"""`python -m models.retinanet --model_dir=DIR` trains configs/retinanet/default.gin on the
built-in digit scenes."""

from models.core.start import run_family

if __name__ == "__main__":
    run_family("retinanet")
