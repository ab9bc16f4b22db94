"""`python -m models.transformer --model_dir=DIR` trains configs/transformer/default.gin on the
built-in pg_messages (PostgreSQL's English-German messages)."""

from models.core.start import run_family

if __name__ == "__main__":
    run_family("transformer")
