"""`python -m models.mask_rcnn --model_dir=DIR` trains configs/mask_rcnn/default.gin on the
built-in digit scenes."""

from models.core.start import run_family

if __name__ == "__main__":
    run_family("mask_rcnn")
