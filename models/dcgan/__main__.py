"""`python -m models.dcgan --model_dir=DIR` trains configs/dcgan/default.gin on the built-in
digits and stops at its FID target."""

from models.core.start import run_family

if __name__ == "__main__":
    run_family("dcgan")
