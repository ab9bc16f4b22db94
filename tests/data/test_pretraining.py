"""The BERT pretraining input: records of create_pretraining_data.py's schema to per-replica
batches under Model Garden's feature names, static or dynamic masks, evaluation padding, and
one-line errors for records of another schema or shape."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from models.core.errors import UsageError
from models.data.convert.bert_pretraining import Masking, convert
from models.data.convert.vocab import learn_vocab
from models.data.pretraining import PretrainingInput, _unmasked
from models.data.text import CLS, MASK, PAD, SEP, read_vocab, write_vocab

SEQ, PREDICTIONS = 64, 10


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    """Train and validation pairs of the json and textwrap modules' docstring sentences."""
    import json
    import textwrap

    from models.data.builtin.python_docs import docstrings, sentences

    folder = tmp_path_factory.mktemp("pretraining")
    for split, module in (("train", json), ("validation", textwrap)):
        lines = [
            line for doc in docstrings(Path(module.__file__)) for line in (*sentences(doc), "")
        ]
        (folder / f"{split}.txt").write_text("\n".join(lines) + "\n")
    vocab, _, _ = learn_vocab([str(folder / "train.txt"), str(folder / "validation.txt")], 400)
    write_vocab(vocab, str(folder / "vocab.txt"))
    masking = Masking(max_seq_length=SEQ, max_predictions_per_seq=PREDICTIONS, dupe_factor=1)
    out = folder / "records"
    for split in ("train", "validation"):
        convert(
            [str(folder / f"{split}.txt")], str(folder / "vocab.txt"), str(out), split, 2, masking
        )
    return out


def _input(data_dir, **changes) -> PretrainingInput:
    return PretrainingInput(
        str(data_dir), seq_length=SEQ, max_predictions_per_seq=PREDICTIONS, **changes
    )


def _batches(pipeline: PretrainingInput, split: str, batch: int, count: int, seed=0) -> list[dict]:
    dataset = pipeline.dataset(split, batch, seed=seed)
    return [{k: v.numpy() for k, v in b.items()} for b in dataset.take(count)]


def test_validation_reads_every_pair_once_then_pads(data_dir):
    pipeline = _input(data_dir)
    pipeline.validate()
    pairs = pipeline.num_examples("validation")
    batches = _batches(pipeline, "validation", 16, pairs // 16 + 2)
    labels = np.concatenate([b["next_sentence_labels"] for b in batches])
    assert (labels[:pairs] >= 0).all() and (labels[pairs:] == -1).all()
    weights = np.concatenate([b["masked_lm_weights"] for b in batches])
    assert weights[pairs:].sum() == 0 and (weights[:pairs].sum(axis=1) > 0).all()
    assert batches[0]["input_word_ids"].shape == (16, SEQ)
    assert batches[0]["masked_lm_positions"].shape == (16, PREDICTIONS)


def test_dynamic_masking_masks_the_same_pairs_anew(data_dir):
    static = _batches(_input(data_dir), "train", 32, 4)
    dynamic = _batches(_input(data_dir, dynamic_masking=True), "train", 32, 4)
    vocab = read_vocab(str(data_dir / "vocab.txt"))
    masked_tokens = []
    for a, b in zip(static, dynamic, strict=True):
        np.testing.assert_array_equal(_unmasked(a), _unmasked(b))  # same pairs, same order
        assert {k: v.dtype for k, v in a.items()} == {k: v.dtype for k, v in b.items()}
        weights = b["masked_lm_weights"] > 0
        positions = b["masked_lm_positions"][weights]
        rows = np.nonzero(weights)[0]
        original = _unmasked(b).numpy()[rows, positions]
        np.testing.assert_array_equal(original, b["masked_lm_ids"][weights])
        assert not np.isin(original, [vocab.index(t) for t in (PAD, CLS, SEP)]).any()
        assert (positions < b["input_mask"].sum(axis=1)[rows]).all()
        masked_tokens.append(b["input_word_ids"][rows, positions])
        assert not np.array_equal(a["masked_lm_positions"], b["masked_lm_positions"])
    masked_tokens = np.concatenate(masked_tokens)
    assert 0.7 < np.mean(masked_tokens == vocab.index(MASK)) < 0.9


def test_records_of_another_schema_are_one_line(digits_dir):
    pipeline = PretrainingInput(digits_dir)
    with pytest.raises(
        UsageError, match="does not hold BERT pretraining pairs of sequence length 128"
    ):
        pipeline.validate()


def test_a_sequence_length_other_than_the_datas_is_one_line(data_dir):
    with pytest.raises(UsageError, match=r"set --gin_param='pretraining_input.seq_length = 64'"):
        PretrainingInput(str(data_dir)).validate()


def test_each_replica_reads_its_own_pairs(data_dir):
    pipeline = _input(data_dir)
    contexts = [tf.distribute.InputContext(2, index, 2) for index in range(2)]
    firsts = [
        next(iter(pipeline.dataset("validation", 8, c)))["input_word_ids"].numpy() for c in contexts
    ]
    assert firsts[0].shape == (4, SEQ)
    assert not np.array_equal(firsts[0], firsts[1])
