"""BERT pretraining records: written by Model Garden's copy of create_pretraining_data.py from
text files, read back by Model Garden's BERT pretraining dataloader; bad input is one line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from official.nlp.data import create_pretraining_data
from official.nlp.data.pretrain_dataloader import BertPretrainDataConfig, BertPretrainDataLoader
from zoo_testing import one_error_line, run_converter

from models.core.errors import UsageError
from models.data.convert.bert_pretraining import Masking, convert
from models.data.convert.vocab import learn_vocab
from models.data.text import CLS, MASK, PAD, SEP, read_vocab, write_vocab

SMALL = Masking(max_seq_length=64, max_predictions_per_seq=10, dupe_factor=2)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """Documents of real sentences (the json and textwrap modules' docstrings), one sentence a
    line, a blank line between documents, and a vocabulary learned on them."""
    import json as json_module
    import textwrap

    from models.data.builtin.python_docs import docstrings, sentences

    folder = tmp_path_factory.mktemp("corpus")
    lines = []
    for module in (json_module, textwrap):
        for docstring in docstrings(Path(module.__file__)):
            lines += [*sentences(docstring), ""]
    (folder / "text.txt").write_text("\n".join(lines) + "\n")
    vocab, _, _ = learn_vocab([str(folder / "text.txt")], vocab_size=400)
    write_vocab(vocab, str(folder / "vocab.txt"))
    return folder


def _convert(corpus: Path, out: Path, **changes) -> dict:
    masking = Masking(**{**SMALL.__dict__, **changes})
    return convert(
        [str(corpus / "text.txt")], str(corpus / "vocab.txt"), str(out), "train", 2, masking
    )


def test_records_decode_with_model_gardens_pretraining_dataloader(corpus, tmp_path):
    info = _convert(corpus, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "dataset_info.json",
        "train-00000-of-00002",
        "train-00001-of-00002",
        "vocab.txt",  # the vocabulary that made them, beside them
    ]
    assert json.loads((tmp_path / "dataset_info.json").read_text()) == info
    config = BertPretrainDataConfig(
        input_path=str(tmp_path / "train-*"),
        seq_length=64,
        max_predictions_per_seq=10,
        global_batch_size=info["num_train_examples"],
        is_training=False,
    )
    batch = {k: v.numpy() for k, v in next(iter(BertPretrainDataLoader(config).load())).items()}
    vocab = read_vocab(str(corpus / "vocab.txt"))
    ids, weights = batch["input_word_ids"], batch["masked_lm_weights"] > 0
    assert ids.shape == (info["num_train_examples"], 64)
    assert (ids[:, 0] == vocab.index(CLS)).all()
    assert ((ids == vocab.index(SEP)).sum(axis=1) == 2).all()  # one pair a record
    masked = np.take_along_axis(ids, batch["masked_lm_positions"], axis=1)[weights]
    assert 0.7 < np.mean(masked == vocab.index(MASK)) < 0.9  # BERT's 80% [MASK]
    assert (batch["masked_lm_ids"][weights] != vocab.index(PAD)).all()
    assert set(batch["next_sentence_labels"].ravel()) == {0, 1}


def test_a_split_is_never_overwritten_and_shapes_must_agree(corpus, tmp_path):
    _convert(corpus, tmp_path)
    with pytest.raises(UsageError, match="already holds train shards"):
        _convert(corpus, tmp_path)
    with pytest.raises(UsageError, match="max_seq_length 64, not 32"):
        convert(
            [str(corpus / "text.txt")],
            str(corpus / "vocab.txt"),
            str(tmp_path),
            "validation",
            1,
            Masking(max_seq_length=32, max_predictions_per_seq=5),
        )


def test_a_failure_while_writing_leaves_no_shard(corpus, tmp_path, monkeypatch):
    real_write = create_pretraining_data.write_instance_to_example_files

    def write_then_fail(instances, *args, **kwargs):
        real_write(list(instances)[:3], *args, **kwargs)
        raise OSError("disk full")

    monkeypatch.setattr(create_pretraining_data, "write_instance_to_example_files", write_then_fail)
    with pytest.raises(OSError, match="disk full"):
        _convert(corpus, tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"max_predictions_per_seq": 100}, "--max_predictions_per_seq must be in [1,"),
        ({"masked_lm_prob": 0.0}, "--masked_lm_prob must be in (0, 1)"),
        ({"dupe_factor": 0}, "--dupe_factor must be at least 1"),
        ({"max_seq_length": 4, "max_predictions_per_seq": 2}, "--max_seq_length must be at least"),
    ],
)
def test_bad_masking_settings_are_usage_errors(changes, message, corpus, tmp_path):
    with pytest.raises(UsageError) as error:
        _convert(corpus, tmp_path, **changes)
    assert message in str(error.value)
    assert list(tmp_path.iterdir()) == []


def test_cli_writes_records_and_bad_input_is_one_line(corpus, tmp_path, cli_env):
    out = tmp_path / "out"
    args = [f"--input={corpus / 'text.txt'}", f"--vocab={corpus / 'vocab.txt'}"]
    result = run_converter(
        "bert_pretraining", *args, f"--output_dir={out}", "--dupe_factor=1", env=cli_env
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "train sentence pairs of up to 128 tokens" in result.stdout
    assert "masked_lm_ids" not in result.stderr  # Model Garden's example logging stays quiet
    (tmp_path / "empty.txt").write_text("\n\n")
    bad = [f"--input={tmp_path / 'empty.txt'}", f"--vocab={corpus / 'vocab.txt'}"]
    line = one_error_line(
        run_converter("bert_pretraining", *bad, f"--output_dir={tmp_path / 'x'}", env=cli_env)
    )
    assert "has no text to make sentence pairs of" in line
    assert not list((tmp_path / "x").glob("train-*"))
