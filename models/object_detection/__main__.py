"""`python -m models.object_detection --model_dir=DIR` trains configs/object_detection/default.gin
on the built-in digit scenes."""

from models.core.start import run_family

if __name__ == "__main__":
    run_family("object_detection")
