"""benchmarks.throughput's Transformer anchor (Model Garden's wmt_transformer/large) at a tiny
batch: both sides run on the same synthetic batches and count the same examples and tokens."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from zoo_testing import PYTHON

from benchmarks.throughput.anchors import transformer
from benchmarks.throughput.render import render
from models.core.errors import UsageError
from models.data.convert.parallel_text import MODEL_FILE

BATCH = 2  # the default recipe's batch counts pairs of max_length tokens a side
TOKENS = 2 * 64  # the built-in data's max_length


@pytest.fixture(scope="module")
def sentencepiece_path() -> str:
    from models.data import builtin

    return os.path.join(builtin.prepare("pg_messages"), MODEL_FILE)


def test_model_gardens_task_needs_our_vocabulary(sentencepiece_path):
    transformer.check_vocabulary({"vocab_size": 4000}, sentencepiece_path)
    with pytest.raises(UsageError, match="vocabulary is 37000 tokens .* takes 4000 from"):
        transformer.check_vocabulary({"vocab_size": 37000}, sentencepiece_path)


@pytest.mark.slow
def test_transformer_default_recipe_against_model_gardens_translation_task(cli_env):
    args = [f"--batch={BATCH}", "--precision=float32", "--steps=1", "--warmup_steps=1"]
    args += ["--recipe=transformer/default", "--peak_size=64", "--json"]
    command = [PYTHON, "-m", "benchmarks.throughput", *args]
    done = subprocess.run(command, capture_output=True, text=True, env=cli_env, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["family"], result["model"]) == ("transformer", "transformer_tiny")
    assert result["tokens_per_batch"] == TOKENS
    mine, anchor = result["ours"], result["anchor"]
    assert anchor["name"].startswith("Model Garden: exp_factory 'wmt_transformer/large'")
    assert result["params_match"] and result["ratio_ours_to_anchor"] > 0
    for side in (mine, anchor):
        assert side["tokens_per_s"] == pytest.approx(side["examples_per_s"] * TOKENS / BATCH)
    # Forward + backward of a token a side: about 6 x the weights.
    assert mine["flops_per_example"] == anchor["flops_per_example"]
    per_token = mine["flops_per_example"] * BATCH / TOKENS
    assert 5 * mine["params"] < per_token < 8 * mine["params"]
    matched = anchor["matched"]
    assert (matched["replica_batch_rows"], matched["tokens_per_batch"]) == (BATCH, TOKENS)
    assert matched["encoder"]["num_layers"] == matched["decoder"]["num_layers"] == 2
    assert matched["vocab_size"] == 4000 and matched["label_smoothing"] == 0.1
    assert matched["adam"] == {"beta_1": 0.9, "beta_2": 0.98, "epsilon": 1e-9}
    table = render(result)
    assert "| | examples/s | tokens/s | ms/step |" in table
    assert "ratio ours / anchor (examples/s, tokens/s)" in table
    assert "tokens/s: examples/s x 64 tokens an example" in table
