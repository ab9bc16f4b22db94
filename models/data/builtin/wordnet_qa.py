"""The built-in extractive question-answering task: SQuAD v1.1 JSON made from WordNet 3.0's noun
entries (Princeton's WordNet licence, Debian's wordnet-base package), two entries of one
lexicographer file to a context ("dog, domestic dog: a member of the genus Canis."), asking
for each entry's definition and for another word of it; and its BERT records (the SQuAD
converter's schema, python_docs' vocabulary), split by context."""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from models.data.builtin.cache import build_once
from models.data.builtin.wordnet_glosses import WORDNET_NOUNS, digest, is_dev, read_synsets

NAME = "wordnet-qa-v2"
# Two entries a context: python_docs' vocabulary splits WordNet's words into ~3.5 pieces, so a
# context of two is ~90 tokens and most questions fit one window of 128 (v1's four needed 2.6
# windows, 54% of training windows answered by [CLS]).
ENTRIES_PER_CONTEXT = 2
# About 3 questions a context (2 definitions; 49% of noun synsets have a second word): about
# 24,000 train and 1,200 dev questions, so that fine-tuning stays cheap on a 2-core CPU.
TRAIN_CONTEXTS = 8000
DEV_CONTEXTS = 400
WINDOWS = {"max_seq_length": 128, "doc_stride": 64, "max_query_length": 32}
JSON_FILES = {"train": "train-v1.1.json", "dev": "dev-v1.1.json"}
SENTENCE_ENDS = (".", "!", "?")


@dataclass(frozen=True)
class Entry:
    """One noun synset: its offset (a unique id), lexicographer file, words and definition."""

    offset: str
    lex_file: str
    words: tuple[str, ...]
    definition: str

    @property
    def head(self) -> str:
        """The words before the definition in the entry's sentence."""
        return ", ".join(self.words) + ": "

    @property
    def sentence(self) -> str:
        """The entry as one sentence of a context: `words: definition.`"""
        end = "" if self.definition.endswith(SENTENCE_ENDS) else "."
        return self.head + self.definition + end

    @property
    def synonyms(self) -> list[tuple[str, int]]:
        """The entry's other words with their offsets in its sentence, less case variants of its
        first word ("Earth, earth"), which would ask for the word the question names."""
        found, start = [], 0
        for word in self.words:
            if word.lower() != self.words[0].lower():
                found.append((word, start))
            start += len(word) + len(", ")
        return found


def read_entries(path: Path = WORDNET_NOUNS) -> list[Entry]:
    """Every noun synset with a definition, as the glosses task reads them."""
    return [Entry(*synset) for synset in read_synsets(path)]


def group_contexts(
    entries: list[Entry], train_contexts: int | None = None, dev_contexts: int | None = None
) -> dict[str, list[list[Entry]]]:
    """Contexts of ENTRIES_PER_CONTEXT entries of one lexicographer file and one split (dev:
    wordnet_glosses' dev synsets, so neither task trains on the other's dev definitions), in the
    order of their first entry's hash, the first train_contexts / dev_contexts of them."""
    groups: dict[tuple[str, str], list[Entry]] = {}
    for entry in entries:
        split = "dev" if is_dev(entry.offset) else "train"
        groups.setdefault((split, entry.lex_file), []).append(entry)
    contexts: dict[str, list[list[Entry]]] = {"train": [], "dev": []}
    for (split, _), group in groups.items():
        group.sort(key=lambda entry: digest(entry.offset))
        whole = len(group) - len(group) % ENTRIES_PER_CONTEXT
        contexts[split] += [
            group[i : i + ENTRIES_PER_CONTEXT] for i in range(0, whole, ENTRIES_PER_CONTEXT)
        ]
    caps = {"train": train_contexts, "dev": dev_contexts}
    for split, found in contexts.items():
        found.sort(key=lambda context: digest(context[0].offset))
        found[:] = found[: caps[split]]
    return contexts


def _answer(context: str, text: str, start: int) -> dict:
    """A SQuAD answer, checked to be the context's text at its start."""
    if context[start : start + len(text)] != text:
        raise ValueError(f"answer {text!r} is not at {start} of {context!r}")
    return {"text": text, "answer_start": start}


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def paragraph(context: list[Entry], dev: bool) -> dict:
    """The SQuAD paragraph of a context: a definition question for each entry, and a synonym
    question for each entry with another word (train: the first other word; dev: all of them)."""
    text = " ".join(entry.sentence for entry in context)
    qas = []
    start = 0
    for entry in context:
        word = entry.words[0]
        definition = _answer(text, entry.definition, start + len(entry.head))
        qas.append(
            {
                "id": f"{entry.offset}-definition",
                "question": f"What is {_article(word)} {word}?",
                "answers": [definition],
            }
        )
        if synonyms := entry.synonyms:
            answers = [
                _answer(text, other, start + offset)
                for other, offset in (synonyms if dev else synonyms[:1])
            ]
            qas.append(
                {
                    "id": f"{entry.offset}-synonym",
                    "question": f"What is another word for {word}?",
                    "answers": answers,
                }
            )
        start += len(entry.sentence) + 1
    return {"context": text, "qas": qas}


def squad_json(contexts: list[list[Entry]], dev: bool) -> dict:
    """SQuAD v1.1 JSON of the contexts, one article each (titled by its lexicographer file), in
    their hash order: a converter that keeps the file's order gets no runs of one class."""
    data = [
        {"title": context[0].lex_file, "paragraphs": [paragraph(context, dev)]}
        for context in contexts
    ]
    return {"version": "1.1", "data": data}


def write_squad(
    folder: Path,
    path: Path = WORDNET_NOUNS,
    train_contexts: int | None = TRAIN_CONTEXTS,
    dev_contexts: int | None = DEV_CONTEXTS,
) -> tuple[dict[str, list[list[Entry]]], dict[str, dict]]:
    """Writes train-v1.1.json and dev-v1.1.json into folder; their contexts and JSON, by split."""
    contexts = group_contexts(read_entries(path), train_contexts, dev_contexts)
    datasets = {split: squad_json(found, dev=split == "dev") for split, found in contexts.items()}
    folder.mkdir(parents=True, exist_ok=True)
    for split, name in JSON_FILES.items():
        (folder / name).write_text(json.dumps(datasets[split], indent=1) + "\n", encoding="utf-8")
    return contexts, datasets


def question_counts(dataset: dict) -> dict[str, int]:
    """Questions of a SQuAD JSON by kind (the suffix of their ids)."""
    return dict(
        Counter(
            qa["id"].rsplit("-", 1)[1]
            for article in dataset["data"]
            for paragraph in article["paragraphs"]
            for qa in paragraph["qas"]
        )
    )


def baselines(contexts: list[list[Entry]], dataset: dict) -> dict[str, dict[str, float]]:
    """SQuAD v1.1 exact match and F1 of trivial answers to every question of a context: its
    first definition, its first word, the whole context (the scores a model must beat)."""
    from official.nlp.tools import squad_evaluate_v1_1

    guesses = {
        "baseline_first_definition": lambda context, text: context[0].definition,
        "baseline_first_word": lambda context, text: context[0].words[0],
        "baseline_whole_context": lambda context, text: text,
    }
    scores = {}
    for name, guess in guesses.items():
        predictions = {}
        for context, article in zip(contexts, dataset["data"], strict=True):
            for paragraph in article["paragraphs"]:
                answer = guess(context, paragraph["context"])
                predictions.update({qa["id"]: answer for qa in paragraph["qas"]})
        result = squad_evaluate_v1_1.evaluate(dataset["data"], predictions)
        scores[name] = {
            "exact_match": round(result["exact_match"], 4),
            "f1": round(result["final_f1"], 4),
        }
    return scores


def _write(out: Path) -> None:
    from models.data.builtin import python_docs
    from models.data.convert import squad

    contexts, datasets = write_squad(out / "json")
    vocab = os.path.join(python_docs.prepare(), "vocab.txt")
    windows = squad.Windows(**WINDOWS)
    for split, name in (("train", JSON_FILES["train"]), ("validation", JSON_FILES["dev"])):
        squad.convert(str(out / "json" / name), vocab, str(out), split, windows=windows)
    extra: dict = {"source": "WordNet 3.0 nouns (Princeton WordNet licence, Debian wordnet-base)"}
    for split, key in (("train", "train"), ("dev", "validation")):
        kinds = question_counts(datasets[split])
        extra[f"num_{key}_contexts"] = len(contexts[split])
        extra[f"{key}_questions_by_kind"] = kinds
    extra.update(baselines(contexts["dev"], datasets["dev"]))
    info = json.loads((out / "dataset_info.json").read_text())
    (out / "dataset_info.json").write_text(json.dumps({**info, **extra}, indent=1) + "\n")


def prepare() -> str:
    """Directory of the SQuAD JSON (json/), its BERT records and dataset_info.json, built once
    into the cache."""
    return build_once(NAME, _write)
