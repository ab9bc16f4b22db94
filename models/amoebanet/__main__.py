"""`python -m models.amoebanet --model_dir=DIR` trains configs/amoebanet/default.gin on digits."""

from models.core.main import main

if __name__ == "__main__":
    main(family="amoebanet")
