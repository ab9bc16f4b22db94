"""SQuAD v1.1 records: written by Model Garden's copy of run_squad.py's featurisation from
SQuAD JSON, read back by Model Garden's question-answering data loader and by our input; bad
input is one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from official.nlp.data.question_answering_dataloader import (
    QADataConfig,
    QuestionAnsweringDataLoader,
)
from squad_testing import squad_json, write_squad
from zoo_testing import one_error_line, run_converter

from models.data.convert.squad import Windows, convert
from models.data.convert.vocab import learn_vocab
from models.data.question_answering import PAD_ID, QuestionAnsweringInput
from models.data.text import write_vocab

SMALL = Windows(max_seq_length=48, doc_stride=16, max_query_length=16)


@pytest.fixture(scope="module")
def squad(tmp_path_factory) -> Path:
    """The hand-written SQuAD files and a WordPiece vocabulary learned on their text."""
    folder = tmp_path_factory.mktemp("squad")
    write_squad(folder)
    lines = []
    for article in squad_json(training=False)["data"]:
        for paragraph in article["paragraphs"]:
            lines += [paragraph["context"], *(qa["question"] for qa in paragraph["qas"])]
    (folder / "text.txt").write_text("\n".join(lines) + "\n")
    vocab, _, _ = learn_vocab([str(folder / "text.txt")], vocab_size=300)
    write_vocab(vocab, str(folder / "vocab.txt"))
    return folder


def _convert_both(squad: Path, out: Path) -> dict:
    vocab = str(squad / "vocab.txt")
    convert(str(squad / "train-v1.1.json"), vocab, str(out), "train", SMALL)
    return convert(str(squad / "dev-v1.1.json"), vocab, str(out), "validation", SMALL)


def test_records_decode_with_model_gardens_qa_loader_and_our_input(squad, tmp_path):
    info = _convert_both(squad, tmp_path)
    assert info["num_train_questions"] == info["num_validation_questions"] == 8
    assert info["num_train_examples"] > 8  # long contexts give several windows
    assert json.loads((tmp_path / "validation.json").read_text()) == squad_json(training=False)
    config = QADataConfig(
        input_path=str(tmp_path / "train-*"), seq_length=48, global_batch_size=4, is_training=True
    )
    features, labels = next(iter(QuestionAnsweringDataLoader(config).load()))
    assert features["input_word_ids"].shape == (4, 48) and labels["start_positions"].shape == (4,)
    ours = QuestionAnsweringInput(data_dir=str(tmp_path), seq_length=48)
    ours.validate()
    windows, positions = next(iter(ours.dataset("train", 4, seed=1)))
    assert set(windows) == {"input_word_ids", "input_mask", "input_type_ids"}
    assert (positions["end_positions"] >= positions["start_positions"]).numpy().all()
    count = info["num_validation_examples"]
    batches = ours.dataset("validation", 8).take(-(-count // 8))
    ids = [i for batch in batches for i in batch["unique_ids"].numpy()]
    real = [i for i in ids if i != PAD_ID]
    assert real == [window.unique_id for window in ours.evaluation_set()[2]]


@pytest.mark.slow
def test_cli_writes_records_and_bad_input_is_one_line(squad, tmp_path, cli_env):
    vocab = f"--vocab={squad / 'vocab.txt'}"
    out = f"--output_dir={tmp_path / 'out'}"
    sizes = ("--max_seq_length=48", "--max_query_length=16")
    train = f"--input={squad / 'train-v1.1.json'}"
    result = run_converter("squad", train, vocab, out, *sizes, env=cli_env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "train windows of 8 questions" in result.stdout
    (tmp_path / "bad.json").write_text('{"data": [{"paragraphs": [{"context": "abc"}]}]}')
    answer = {"text": "cat", "answer_start": 4}  # where the context says "dog"
    question = {"id": "q1", "question": "Which pet?", "answers": [answer]}
    misplaced = {"data": [{"paragraphs": [{"context": "the dog sat", "qas": [question]}]}]}
    (tmp_path / "misplaced.json").write_text(json.dumps(misplaced))
    cases = {
        "dev-v1.1.json": "has 2 answers; training needs one",
        "bad.json": "is not SQuAD v1.1 JSON",
        "missing.json": "is not a file",
        "misplaced.json": "holds no question: every answer is misplaced (question q1: 'cat', "
        "where the context has 'dog')",
    }
    for name, message in cases.items():
        folder = squad if name.startswith("dev") else tmp_path
        x = f"--output_dir={tmp_path / 'x'}"
        bad = run_converter("squad", f"--input={folder / name}", vocab, x, env=cli_env)
        line = one_error_line(bad)
        assert message in line
        assert not list((tmp_path / "x").glob("train-*"))
    again = run_converter("squad", train, vocab, out, *sizes, env=cli_env)
    assert "already holds train shards" in one_error_line(again)
