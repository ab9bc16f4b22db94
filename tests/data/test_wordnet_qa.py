"""The built-in question-answering task: SQuAD v1.1 JSON on WordNet's noun entries, two of one
lexicographer file to a context, split by context, and its BERT records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tensorflow as tf

from models.core.errors import UsageError
from models.data.builtin import wordnet_qa
from models.data.builtin.wordnet_glosses import is_dev
from models.data.builtin.wordnet_qa import Entry, paragraph, read_entries

HEADER = "  1 This software and database is being provided to you, the LICENSEE | by Princeton\n"


def _line(offset: str, lex_file: int, words: list[str], gloss: str) -> str:
    """A data.noun line: offset, lexicographer file, hex word count, words, pointers, gloss."""
    lemmas = " ".join(f"{word} 0" for word in words)
    return (
        f"{offset} {lex_file:02d} n {len(words):02x} {lemmas} 001 @ 00001740 n 0000 | {gloss}  \n"
    )


def _fake_nouns(path: Path, count: int = 200) -> Path:
    """A data.noun of `count` synsets in two lexicographer files, every other with 3 words."""
    lines = [
        _line(
            f"{10_000_000 + i:08d}",
            5 + i % 2,
            [f"thing_{i}", f"item{i}", f"object{i}"] if i % 2 else [f"unit{i}"],
            f'the {i}th made-up thing; "an example of thing {i}"',
        )
        for i in range(count)
    ]
    path.write_text(HEADER + "".join(lines))
    return path


def _answers(dataset: dict):
    """(context, question, answer) of every answer of a SQuAD JSON."""
    for article in dataset["data"]:
        for item in article["paragraphs"]:
            for qa in item["qas"]:
                for answer in qa["answers"]:
                    yield item["context"], qa, answer


def test_entries_are_words_and_definitions(tmp_path):
    path = tmp_path / "data.noun"
    words = [f"w{i}" for i in range(11)]
    path.write_text(
        HEADER
        + _line("02084071", 5, ["dog", "domestic_dog", "Canis_familiaris"], "a member of the genus")
        + _line("00001740", 3, words, 'that which exists; "an example"')
    )
    dog = ("dog", "domestic dog", "Canis familiaris")
    assert read_entries(path) == [
        Entry("02084071", "noun.animal", dog, "a member of the genus"),
        Entry("00001740", "noun.Tops", tuple(words), "that which exists"),
    ]


def test_missing_wordnet_names_the_install_command(tmp_path):
    with pytest.raises(UsageError, match="install it with `apt-get install wordnet-base`"):
        read_entries(tmp_path / "data.noun")


CONTEXT = [
    Entry("1", "noun.Tops", ("Earth", "earth", "world", "globe"), "the planet we live on"),
    Entry("2", "noun.Tops", ("ace", "one"), "the smallest whole number"),
    Entry("3", "noun.Tops", ("bit",), "a single thing"),
    Entry("4", "noun.Tops", ("etc",), "and so on etc."),
]


def test_paragraph_answers_are_the_context_at_their_starts():
    item = paragraph(CONTEXT, dev=False)
    assert item["context"] == (
        "Earth, earth, world, globe: the planet we live on. ace, one: the smallest whole number. "
        "bit: a single thing. etc: and so on etc."
    )
    questions = {qa["question"]: [a["text"] for a in qa["answers"]] for qa in item["qas"]}
    assert questions == {
        "What is an Earth?": ["the planet we live on"],
        "What is another word for Earth?": ["world"],  # not its case variant "earth"
        "What is an ace?": ["the smallest whole number"],
        "What is another word for ace?": ["one"],
        "What is a bit?": ["a single thing"],
        "What is an etc?": ["and so on etc."],
    }
    assert len({qa["id"] for qa in item["qas"]}) == len(item["qas"])
    for context, _, answer in _answers({"data": [{"paragraphs": [item]}]}):
        assert context[answer["answer_start"] :].startswith(answer["text"])


def test_dev_synonym_questions_list_every_other_word():
    qa = next(qa for qa in paragraph(CONTEXT, dev=True)["qas"] if qa["id"] == "1-synonym")
    assert qa["answers"] == [
        {"text": "world", "answer_start": 14},
        {"text": "globe", "answer_start": 21},
    ]


def test_baselines_score_trivial_answers():
    dataset = wordnet_qa.squad_json([CONTEXT], dev=True)
    scores = wordnet_qa.baselines([CONTEXT], dataset)
    # One definition right of 6 questions; "and so on etc." shares "on" with the guess: F1 1/4.
    assert scores["baseline_first_definition"] == {
        "exact_match": round(1 / 6, 4),
        "f1": round((1 + 1 / 4) / 6, 4),
    }
    assert scores["baseline_first_word"]["exact_match"] == 0.0
    assert scores["baseline_whole_context"]["exact_match"] == 0.0


def test_contexts_are_one_lexicographer_file_and_one_split(tmp_path):
    path = _fake_nouns(tmp_path / "data.noun")
    contexts, datasets = wordnet_qa.write_squad(tmp_path / "json", path, 30, None)
    assert len(contexts["train"]) == 30 and contexts["dev"]
    for split, found in contexts.items():
        for context in found:
            assert len(context) == wordnet_qa.ENTRIES_PER_CONTEXT
            assert len({entry.lex_file for entry in context}) == 1
            assert {is_dev(entry.offset) for entry in context} == {split == "dev"}
        saved = json.loads((tmp_path / "json" / wordnet_qa.JSON_FILES[split]).read_text())
        assert saved == datasets[split]
        assert [a["title"] for a in saved["data"]] == [c[0].lex_file for c in found]
    texts = {
        split: {a["paragraphs"][0]["context"] for a in d["data"]} for split, d in datasets.items()
    }
    assert not texts["train"] & texts["dev"]
    train_answers = [len(qa["answers"]) for _, qa, _ in _answers(datasets["train"])]
    assert set(train_answers) == {1}  # SQuAD training reads one answer a question


@pytest.mark.slow
def test_real_wordnet_questions_fit_their_contexts(tmp_path):
    contexts, datasets = wordnet_qa.write_squad(tmp_path)
    assert len(contexts["train"]) == wordnet_qa.TRAIN_CONTEXTS
    assert len(contexts["dev"]) == wordnet_qa.DEV_CONTEXTS
    counts = {split: wordnet_qa.question_counts(d) for split, d in datasets.items()}
    assert 22_000 < sum(counts["train"].values()) < 26_000
    assert 1_000 < sum(counts["dev"].values()) < 1_400
    assert counts["dev"]["definition"] == wordnet_qa.ENTRIES_PER_CONTEXT * wordnet_qa.DEV_CONTEXTS
    ids = [
        qa["id"] for d in datasets.values() for a in d["data"] for qa in a["paragraphs"][0]["qas"]
    ]
    assert len(set(ids)) == len(ids)
    for dataset in datasets.values():
        for context, _, answer in _answers(dataset):
            start = answer["answer_start"]
            assert context[start : start + len(answer["text"])] == answer["text"]
    offsets = {s: {e.offset for c in found for e in c} for s, found in contexts.items()}
    assert not offsets["train"] & offsets["dev"]


@pytest.mark.slow
def test_builtin_task_records_and_baselines():
    from models.data import builtin

    folder = Path(builtin.prepare("wordnet_qa"))
    info = json.loads((folder / "dataset_info.json").read_text())
    assert info["source"].startswith("WordNet 3.0 nouns")
    for split in ("train", "validation"):
        assert info[f"num_{split}_questions"] == sum(info[f"{split}_questions_by_kind"].values())
        assert info[f"num_{split}_examples"] >= info[f"num_{split}_questions"]  # windows
        records = tf.data.TFRecordDataset(sorted(map(str, folder.glob(f"{split}-*-of-*"))))
        assert sum(1 for _ in records) == info[f"num_{split}_examples"]
    assert info["num_validation_contexts"] == wordnet_qa.DEV_CONTEXTS
    # Most questions fit one window of 128 (few training windows answered by [CLS]).
    assert info["num_train_examples"] < 1.4 * info["num_train_questions"]
    dev = json.loads((folder / "json" / "dev-v1.1.json").read_text())
    assert json.loads((folder / "validation.json").read_text()) == dev
    # Two entries a context: the first definition answers about half the definition questions.
    assert 0.25 < info["baseline_first_definition"]["exact_match"] < 0.45
    assert info["baseline_first_word"]["exact_match"] == 0.0
    assert 0.3 < info["baseline_whole_context"]["f1"] < 0.5
