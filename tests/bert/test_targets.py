"""BERT's acceptance runs through the CLI: the default recipe pretrains BERT-tiny on the built-in
python_docs to its masked-LM accuracy target, bert/glosses.gin fine-tunes that run's encoder to
its accuracy target on the built-in WordNet glosses and bert/squad.gin to its F1 target on the
built-in wordnet_qa, and each run exports a SavedModel that answers raw strings in a fresh
process (which imports only TensorFlow and tensorflow-text, whose tokenizer ops the graphs
use)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from family_checks import check_reaches_target
from official.nlp.tools import squad_evaluate_v1_1
from zoo_testing import run_model, serve_fresh

from models.data import builtin

FINE_TUNING = "--gin_file=bert/glosses.gin"
QUESTION_ANSWERING = "--gin_file=bert/squad.gin"


def _export(model_dir, *args: str, env: dict) -> str:
    result = run_model("bert", model_dir, *args, "--mode=export", env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    return re.search(r"exported SavedModel to (\S+)", result.stdout).group(1)


@pytest.mark.target
def test_pretrains_to_target_then_fine_tunes_from_it_to_targets(tmp_path, cli_env):
    pretrained, glosses, squad = (tmp_path / name for name in ("pretrained", "glosses", "squad"))
    check_reaches_target("bert", pretrained, cli_env)
    answers = serve_fresh(
        _export(pretrained, env=cli_env),
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

    init = f"--gin_param=train.init_checkpoint = '{pretrained}'"
    output = check_reaches_target("bert", glosses, cli_env, FINE_TUNING, init)
    assert f"initialised model/encoder_network from {pretrained}/ckpt-" in output
    # The export classifies raw dev definitions as well as the run's evaluation did (0.5 on all
    # 8,324; 2,000 of them: a standard error of about 1.1 points).
    dev = Path(builtin.prepare("wordnet_glosses"), "dev.tsv").read_text().splitlines()[1:2001]
    definitions, labels = zip(*(line.split("\t") for line in dev), strict=True)
    export = _export(glosses, FINE_TUNING, env=cli_env)
    answers = serve_fresh(export, {"sentence": list(definitions)}, cli_env)
    assert [len(row) for row in answers["probabilities"]] == [26] * len(labels)
    right = sum(ours == truth for ours, truth in zip(answers["labels"], labels, strict=True))
    assert right / len(labels) >= 0.45

    output = check_reaches_target("bert", squad, cli_env, QUESTION_ANSWERING, init)
    assert f"initialised model/encoder_network from {pretrained}/ckpt-" in output
    # The export answers raw dev questions about as well as the run's evaluation (F1 0.58 there;
    # the export reads only a context's first window, which holds most of these).
    dev = json.loads(Path(builtin.prepare("wordnet_qa"), "validation.json").read_text())
    questions = [
        (qa["id"], qa["question"], item["context"])
        for article in dev["data"]
        for item in article["paragraphs"]
        for qa in item["qas"]
    ]
    ids, question, context = (list(column) for column in zip(*questions, strict=True))
    export = _export(squad, QUESTION_ANSWERING, env=cli_env)
    answers = serve_fresh(export, {"question": question, "context": context}, cli_env)["answer"]
    scores = squad_evaluate_v1_1.evaluate(dev["data"], dict(zip(ids, answers, strict=True)))
    assert scores["final_f1"] >= 0.5, scores
