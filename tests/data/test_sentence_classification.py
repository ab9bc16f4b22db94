"""GLUE-style TSV to BERT inputs, tokenised in the input graph: the same ids, masks, segment
ids and labels as Model Garden's reference featurisation (Google's BERT run_classifier), single
sentences and pairs, with truncation."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from official.nlp.data import classifier_data_lib
from official.nlp.tools.tokenization import FullTokenizer

from models.core.errors import UsageError
from models.data.convert.vocab import learn_vocab
from models.data.sentence_classification import SentenceClassificationInput
from models.data.text import write_vocab

GLOSSES = [
    ("a member of the genus Canis (probably descended from the common wolf)", "noun.animal"),
    (
        "a motor vehicle with four wheels; usually propelled by an internal combustion engine",
        "noun.artifact",
    ),
    ("the first letter of the Greek alphabet", "noun.communication"),
    ("a period of time containing 365 (or 366) days", "noun.time"),
    ("(biology) the basic structural and functional unit of all organisms", "noun.Tops"),
    ("any of numerous small rodents typically resembling diminutive rats", "noun.animal"),
]


@pytest.fixture(scope="module")
def vocab(tmp_path_factory) -> str:
    folder = tmp_path_factory.mktemp("vocab")
    (folder / "text.txt").write_text("\n".join(text for text, _ in GLOSSES) + "\n")
    tokens, _, _ = learn_vocab([str(folder / "text.txt")], vocab_size=100)
    write_vocab(tokens, str(folder / "vocab.txt"))
    return str(folder / "vocab.txt")


def _write_task(folder: Path, columns: tuple[str, ...]) -> list[list[str]]:
    rows = []
    for index, (text, label) in enumerate(GLOSSES):
        other = GLOSSES[(index + 2) % len(GLOSSES)][0][: 12 + 9 * index]
        rows.append([text, other, label] if len(columns) == 2 else [text, label])
    for name in ("train.tsv", "dev.tsv"):
        with (folder / name).open("w", newline="") as file:
            csv.writer(file, delimiter="\t").writerows([[*columns, "label"], *rows])
    return rows


@pytest.mark.parametrize("columns", [("sentence",), ("sentence1", "sentence2")])
def test_features_equal_the_reference_featurisation(columns, vocab, tmp_path):
    rows = _write_task(tmp_path, columns)
    seq_length = 16  # shorter than most: both segments get trimmed
    pipeline = SentenceClassificationInput(
        vocab, str(tmp_path), text_columns=columns, seq_length=seq_length
    )
    features, labels = next(iter(pipeline.dataset("validation", 8)))
    reference = FullTokenizer(vocab, do_lower_case=True)
    for index, row in enumerate(rows):
        example = classifier_data_lib.InputExample(
            str(index), row[0], row[1] if len(columns) == 2 else None, row[-1]
        )
        expected = classifier_data_lib.convert_single_example(
            index, example, pipeline.labels(), seq_length, reference
        )
        assert features["input_word_ids"][index].numpy().tolist() == expected.input_ids
        assert features["input_mask"][index].numpy().tolist() == expected.input_mask
        assert features["input_type_ids"][index].numpy().tolist() == expected.segment_ids
        assert int(labels[index]) == expected.label_id
    assert labels[len(rows) :].numpy().tolist() == [-1] * (8 - len(rows))  # evaluation padding


def test_training_batches_are_endless_and_full(vocab, tmp_path):
    _write_task(tmp_path, ("sentence",))
    pipeline = SentenceClassificationInput(vocab, str(tmp_path), seq_length=32)
    batches = list(pipeline.dataset("train", 4, seed=0).take(5))
    assert all(features["input_word_ids"].shape == (4, 32) for features, _ in batches)
    assert all(int(labels.numpy().min()) >= 0 for _, labels in batches)


def test_bad_task_folders_are_one_line(vocab, tmp_path):
    _write_task(tmp_path, ("sentence",))
    with pytest.raises(UsageError, match="has no column 'sentense' .*did you mean 'sentence'"):
        SentenceClassificationInput(vocab, str(tmp_path), text_columns=("sentense",)).columns(
            "train"
        )
    (tmp_path / "dev.tsv").unlink()
    with pytest.raises(UsageError, match="has no dev.tsv"):
        SentenceClassificationInput(vocab, str(tmp_path)).dataset("validation", 4)
    with pytest.raises(UsageError, match="sentence_input.vocab is not set"):
        SentenceClassificationInput(None, str(tmp_path)).dataset("train", 4)


def test_vocab_is_a_file_its_folder_or_a_builtin_datasets(vocab, tmp_path, monkeypatch):
    from models.data import builtin

    folder = str(Path(vocab).parent)
    monkeypatch.setitem(builtin.BUILTINS, "tiny_corpus", lambda: folder)
    expected = SentenceClassificationInput(vocab, str(tmp_path)).vocab()
    for given in (folder, "tiny_corpus"):
        assert SentenceClassificationInput(given, str(tmp_path)).vocab() == expected
    with pytest.raises(UsageError, match="vocabulary .*missing.txt is not a file"):
        SentenceClassificationInput(str(tmp_path / "missing.txt"), str(tmp_path)).vocab()
