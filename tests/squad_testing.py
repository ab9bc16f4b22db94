"""A small hand-written SQuAD v1.1 file (no SQuAD data ships in a package): two articles,
questions with one answer each for training and several for evaluation, as SQuAD's files are."""

from __future__ import annotations

import json
from pathlib import Path

ARTICLES = {
    "Tensor_Processing_Unit": [
        (
            "A Tensor Processing Unit (TPU) is an application-specific integrated circuit "
            "developed by Google for neural network machine learning. Google began using TPUs "
            "internally in 2015, and in 2018 made them available for third-party use as part of "
            "its cloud infrastructure. A TPU Pod connects up to 1,024 chips with a "
            "two-dimensional torus network.",
            {
                "Who developed the Tensor Processing Unit?": ["Google"],
                "When did Google begin using TPUs internally?": ["2015"],
                "How many chips can a TPU Pod connect?": ["up to 1,024", "1,024"],
                "What network connects the chips of a TPU Pod?": [
                    "two-dimensional torus network",
                    "torus",
                ],
            },
        )
    ],
    "WordNet": [
        (
            "WordNet is a lexical database of semantic relations between words in more than 200 "
            "languages. It links words into semantic relations including synonyms, hyponyms, "
            "and meronyms. The synonyms are grouped into synsets with short definitions and "
            "usage examples. It was created in the Cognitive Science Laboratory of Princeton "
            "University under the direction of psychology professor George Armitage Miller "
            "starting in 1985.",
            {
                "What are groups of synonyms called in WordNet?": ["synsets"],
                "Who directed the creation of WordNet?": [
                    "George Armitage Miller",
                    "psychology professor George Armitage Miller",
                ],
                "Where was WordNet created?": [
                    "the Cognitive Science Laboratory of Princeton University",
                    "Princeton University",
                ],
                "When was WordNet started?": ["1985", "starting in 1985"],
            },
        )
    ],
}


def squad_json(training: bool) -> dict:
    """The articles in SQuAD v1.1's layout; training keeps each question's first answer."""
    data, number = [], 0
    for title, paragraphs in ARTICLES.items():
        rendered = []
        for context, questions in paragraphs:
            qas = []
            for question, answers in questions.items():
                number += 1
                kept = answers[:1] if training else answers
                qas.append(
                    {
                        "id": f"q{number}",
                        "question": question,
                        "answers": [{"text": a, "answer_start": context.index(a)} for a in kept],
                    }
                )
            rendered.append({"context": context, "qas": qas})
        data.append({"title": title, "paragraphs": rendered})
    return {"version": "1.1", "data": data}


def write_squad(folder: Path) -> tuple[Path, Path]:
    """(train-v1.1.json, dev-v1.1.json) written into folder."""
    train, dev = folder / "train-v1.1.json", folder / "dev-v1.1.json"
    train.write_text(json.dumps(squad_json(training=True)))
    dev.write_text(json.dumps(squad_json(training=False)))
    return train, dev
