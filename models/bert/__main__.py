"""`python -m models.bert --model_dir=DIR` pretrains configs/bert/default.gin on the built-in
python_docs corpus; `--gin_file=bert/glosses.gin` fine-tunes on the built-in WordNet glosses."""

from models.core.start import run_family

if __name__ == "__main__":
    run_family("bert")
