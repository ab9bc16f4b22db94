"""`python -m models.asr_transformer --model_dir=DIR` trains configs/asr_transformer/default.gin
on the built-in spoken_wordnet (WordNet's sentences spoken by espeak-ng)."""

from models.core.start import run_family

if __name__ == "__main__":
    run_family("asr_transformer")
