"""SQuAD span extraction: the official EM/F1 of predicted spans mapped back to text and the
exported model's in-graph span search. Fine-tuning from the command line, its export and its
answers in a fresh process are tests/bert/test_bert_chain.py's."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
import tensorflow as tf
from squad_testing import write_squad

from models.bert.question_answering import QuestionAnsweringTask, SpanLogits, best_spans
from models.data.convert.squad import Windows, convert, features, read_squad
from models.data.convert.vocab import learn_vocab
from models.data.text import write_vocab

SMALL = Windows(max_seq_length=48, doc_stride=16, max_query_length=16)


@pytest.fixture(scope="module")
def squad_dir(tmp_path_factory):
    """Records of the hand-written SQuAD file (its train questions also as validation)."""
    folder = tmp_path_factory.mktemp("squad")
    train, _ = write_squad(folder)
    data = json.loads(train.read_text())["data"]
    text = [p["context"] for a in data for p in a["paragraphs"]]
    text += [q["question"] for a in data for p in a["paragraphs"] for q in p["qas"]]
    (folder / "text.txt").write_text("\n".join(text) + "\n")
    vocab, _, _ = learn_vocab([str(folder / "text.txt")], vocab_size=300)
    write_vocab(vocab, str(folder / "vocab.txt"))
    out = folder / "records"
    for split in ("train", "validation"):
        convert(str(train), str(folder / "vocab.txt"), str(out), split, SMALL)
    return folder


def test_gold_spans_score_exact_match_and_f1_of_one(squad_dir):
    task = QuestionAnsweringTask("bert_tiny", data_dir=str(squad_dir / "records"))
    task.input.seq_length = 48
    path = str(squad_dir / "train-v1.1.json")
    gold = features(read_squad(path, True), str(squad_dir / "vocab.txt"), SMALL, True)
    state = []
    for window in gold:
        start, end = np.full(48, -10.0), np.full(48, -10.0)
        start[window.start_position], end[window.end_position] = 10.0, 10.0
        state.append(SpanLogits(window.unique_id, start, end))
    assert task.reduce_aggregated_logs(state, None) == {"exact_match": 1.0, "f1": 1.0}
    wrong = [SpanLogits(s.unique_id, s.end_logits, s.start_logits) for s in state]
    assert task.reduce_aggregated_logs(wrong, None)["f1"] < 1.0


def test_span_search_matches_brute_force():
    rng = np.random.default_rng(0)
    start, end = rng.normal(size=(3, 12)), rng.normal(size=(3, 12))
    first, stop = np.array([2, 4, 5]), np.array([10, 12, 5])
    best, score = best_spans(
        tf.constant(start, tf.float32), tf.constant(end, tf.float32), first, stop, 4
    )
    for row in range(3):
        spans = [
            (start[row, i] + end[row, j], (i, j))
            for i, j in itertools.product(range(first[row], stop[row]), repeat=2)
            if 0 <= j - i < 4
        ]
        if not spans:
            assert score[row] == -np.inf
            continue
        assert tuple(best[row].numpy()) == max(spans)[1]
