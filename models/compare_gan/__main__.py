"""`python -m models.compare_gan --model_dir=DIR` trains configs/compare_gan/default.gin (a
small class-conditional BigGAN) on the built-in digits and stops at its FID target."""

from models.core.start import run_family

if __name__ == "__main__":
    run_family("compare_gan")
