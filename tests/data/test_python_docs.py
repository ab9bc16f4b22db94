"""The built-in English corpus: the standard library's docstrings, split by source file, with
its vocabulary and BERT pretraining records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tensorflow as tf

from models.data.builtin.python_docs import sentences
from models.data.text import UNK, bert_tokenizer, read_vocab


def test_sentences_keep_prose_and_drop_code():
    docstring = (
        "Return a string. It is never empty!\n"
        "Another line of the same paragraph.\n\n"
        ">>> example(1)\n'x'\n\n"
        "Arguments:\n    name -- the name\n\n"
        "Short one."
    )
    assert sentences(docstring) == [
        "Return a string.",
        "It is never empty!",
        "Another line of the same paragraph.",
    ]


@pytest.fixture(scope="module")
def python_docs() -> Path:
    from models.data import builtin

    return Path(builtin.prepare("python_docs"))


@pytest.mark.slow
def test_corpus_vocabulary_and_records(python_docs):
    info = json.loads((python_docs / "dataset_info.json").read_text())
    assert info["source"].startswith("Python 3.")
    assert info["train_documents"] > 5000 and info["validation_documents"] > 200
    assert info["num_train_examples"] > 30_000 and info["num_validation_examples"] > 200
    train = (python_docs / "train.txt").read_text().split("\n\n")
    validation = (python_docs / "validation.txt").read_text().split("\n\n")
    assert len(set(train) & set(validation)) < 0.05 * len(validation)  # by file, not by text
    vocab = read_vocab(str(python_docs / "vocab.txt"))
    assert len(vocab) == info["vocab_size"]
    lines = [line for line in (python_docs / "validation.txt").read_text().splitlines() if line]
    ids = bert_tokenizer(vocab).tokenize(tf.constant(lines)).flat_values.numpy()
    assert (ids == vocab.index(UNK)).mean() < 0.005  # the train vocabulary covers unseen text
    for split in ("train", "validation"):
        records = tf.data.TFRecordDataset(sorted(map(str, python_docs.glob(f"{split}-*"))))
        assert sum(1 for _ in records) == info[f"num_{split}_examples"]
