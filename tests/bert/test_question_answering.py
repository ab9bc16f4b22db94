"""SQuAD span extraction: the official EM/F1 of predicted spans mapped back to text, the
exported model's in-graph span search, and a run from the command line."""

from __future__ import annotations

import itertools
import json
import subprocess

import numpy as np
import pytest
import tensorflow as tf
from squad_testing import write_squad
from zoo_testing import PYTHON

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


@pytest.mark.slow
def test_fine_tunes_from_the_cli_and_the_export_answers_raw_strings(squad_dir, tmp_path, cli_env):
    model_dir = tmp_path / "run"
    params = [
        "run.task = @QuestionAnsweringTask",
        'run.model = "bert_tiny"',
        "squad_input.seq_length = 48",
        "train.global_batch_size = 8",
        "train.examples = None",
        "train.steps = 20",
        "evaluation.every_examples = None",
        "evaluation.every_steps = 20",
        'train.target_metric = "f1"',
    ]
    base = [PYTHON, "-m", "models.bert", f"--model_dir={model_dir}"]
    base += [f"--data_dir={squad_dir / 'records'}", *(f"--gin_param={p}" for p in params)]
    for mode in ("train", "export"):
        result = subprocess.run([*base, f"--mode={mode}"], capture_output=True, text=True,
                                env=cli_env, timeout=600)  # fmt: skip
        assert result.returncode == 0, result.stderr[-3000:]
    assert "f1" in (model_dir / "operative_config.gin").read_text()
    exported = sorted((model_dir / "export").iterdir())[-1]
    script = (
        "import sys, tensorflow as tf, tensorflow_text\n"
        "serve = tf.saved_model.load(sys.argv[1]).signatures['serving_default']\n"
        "out = serve(question=tf.constant(['Who developed it?', 'x']),\n"
        "            context=tf.constant(['Google developed the TPU.', '']))\n"
        "print((out['answer'].numpy().tolist(), out['start'].numpy().tolist()))\n"
    )
    fresh = subprocess.run([PYTHON, "-c", script, str(exported)], capture_output=True,
                           text=True, timeout=300)  # fmt: skip
    assert fresh.returncode == 0, fresh.stderr[-3000:]
    answers, starts = eval(fresh.stdout.strip().splitlines()[-1])  # noqa: S307 - our output
    context = b"Google developed the TPU."
    assert answers[0] and context[starts[0] :].startswith(answers[0])  # a span of the context
    assert answers[1] == b"" and starts[1] == -1  # an empty context has none
