"""benchmarks.model_stats: parameter and multiply-add counts that match the papers' tables."""

from __future__ import annotations

import json
import subprocess

import pytest
from zoo_testing import PYTHON

from benchmarks.model_stats import model_stats


def test_mobilenet_v2_matches_its_paper_at_its_native_size():
    # Sandler et al. 2018 (arXiv 1801.04381), table 4: 300M multiply-adds at 224x224.
    stats = model_stats("mobilenet_v2", None, 1000)
    assert stats["image_size"] == 224  # the registry's native size
    assert stats["trainable_parameters"] == 3_504_872
    assert stats["multiply_adds"] == pytest.approx(300e6, rel=0.02)


@pytest.mark.slow
def test_json_output_and_unknown_model(cli_env):
    command = [PYTHON, "-m", "benchmarks.model_stats", "--json"]
    ok = subprocess.run(
        [*command, "--models=mobilenet_v3_small", "--image_size=96"],
        capture_output=True,
        text=True,
        env=cli_env,
    )
    assert ok.returncode == 0, ok.stderr[-2000:]
    (row,) = json.loads(ok.stdout)["models"]
    assert row["image_size"] == 96 and row["forward_flops"] > 0
    bad = subprocess.run(
        [*command, "--models=mobilenet_v9"], capture_output=True, text=True, env=cli_env
    )
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0
    assert "unknown model 'mobilenet_v9'" in bad.stderr
