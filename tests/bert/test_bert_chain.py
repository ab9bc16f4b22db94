"""BERT's memorisation checks as a chain through the CLI, as a user fine-tunes: pretraining
memorises one batch of the built-in python_docs, then bert/glosses.gin and bert/squad.gin start
from that run's encoder (train.init_checkpoint) and memorise one batch of WordNet glosses and
questions; each run exports a SavedModel that answers raw strings in a fresh process (which
imports only TensorFlow and tensorflow-text) as the run's evaluation did (SQuAD's: spans of the
context at their start bytes, none for an empty context). With the labels
shuffled at every step (tests/breakages.py), pretraining and fine-tuning fail their checks.
The recipes' targets on the full built-in data are `make acceptance`'s (README, "Tests")."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from memorisation import check_fails, check_memorises, export
from memorisation_checks import BY_NAME
from official.nlp.tools import squad_evaluate_v1_1
from one_batch_data import one_batch

from benchmarks.export_checks import serve_fresh, squad_questions

PRETRAINING, GLOSSES, SQUAD = (BY_NAME[name] for name in ("bert", "bert/glosses", "bert/squad"))


def _from(spec, pretrained: Path):
    """The fine-tuning check, started from the pretraining run's encoder."""
    init = f"train.init_checkpoint = '{pretrained}'"
    return dataclasses.replace(spec, params=(*spec.params, init))


@pytest.mark.memorise
def test_pretraining_then_fine_tuning_memorise_export_and_serve(tmp_path, cli_env):
    pretrained, glosses, squad = (tmp_path / name for name in ("pretrained", "glosses", "squad"))
    check_memorises(PRETRAINING, pretrained, cli_env)
    answers = serve_fresh(
        export(PRETRAINING, pretrained, cli_env),
        {"text": ["Return the [MASK] of the list.", "[MASK] [MASK] is", "nothing masked"]},
        cli_env,
    )
    assert [row[:3] for row in answers["is_mask"]] == [
        [True, False, False],
        [True, True, False],
        [False, False, False],
    ]
    assert len(answers["tokens"][0][0]) == 5 and all(answers["tokens"][0][0])
    assert answers["probabilities"][0][0] == sorted(answers["probabilities"][0][0], reverse=True)

    outcome = check_memorises(_from(GLOSSES, pretrained), glosses, cli_env)
    assert f"initialised model/encoder_network from {pretrained}/ckpt-" in outcome.output
    rows = Path(one_batch(GLOSSES.data, GLOSSES.examples), "dev.tsv").read_text().splitlines()
    definitions, labels = zip(*(line.split("\t") for line in rows[1:]), strict=True)
    served = serve_fresh(
        export(GLOSSES, glosses, cli_env), {"sentence": list(definitions)}, cli_env
    )
    assert [len(row) for row in served["probabilities"]] == [26] * len(labels)
    right = sum(ours == truth for ours, truth in zip(served["labels"], labels, strict=True))
    assert right / len(labels) >= GLOSSES.threshold  # as the run's evaluation

    outcome = check_memorises(_from(SQUAD, pretrained), squad, cli_env)
    assert f"initialised model/encoder_network from {pretrained}/ckpt-" in outcome.output
    dev = json.loads(Path(one_batch(SQUAD.data, SQUAD.examples), "validation.json").read_text())
    ids, question, context = squad_questions(dev)
    inputs = {"question": [*question, "Who?"], "context": [*context, ""]}
    served = serve_fresh(export(SQUAD, squad, cli_env), inputs, cli_env)
    answers, starts = served["answer"], served["start"]
    assert answers.pop() == "" and starts.pop() == -1  # an empty context has no answer
    for answer, start, text in zip(answers, starts, context, strict=True):
        assert text.encode()[start:].startswith(answer.encode())  # a span at its start byte
    scores = squad_evaluate_v1_1.evaluate(dev["data"], dict(zip(ids, answers, strict=True)))
    # The export reads a context's first window only: one more answer may be missed there.
    assert scores["final_f1"] >= 0.7, scores


@pytest.mark.memorise
@pytest.mark.parametrize("spec", [PRETRAINING, GLOSSES], ids=lambda spec: spec.name)
def test_shuffled_labels_fail_the_check(spec, tmp_path, cli_env):
    check_fails(spec, tmp_path / "run", cli_env, spec.train_breakage)
