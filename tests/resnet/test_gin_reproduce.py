"""A gin override changes the run; the saved operative_config.gin alone reproduces it."""

from __future__ import annotations

import pytest
from cli import latest_record, run_resnet

SHORT = ["--mode=train_and_eval", "--gin_param=train.target_value = None"]


@pytest.mark.slow
def test_override_changes_run_and_operative_config_reproduces_it(tmp_path, cli_env):
    first = tmp_path / "first"
    result = run_resnet(first, *SHORT, "--gin_param=train.epochs = 2", env=cli_env)
    assert result.returncode == 0, result.stderr[-3000:]
    record = latest_record(first)
    assert record["epochs"] == 2  # the default recipe trains 20 epochs
    assert len(record["eval_curve"]) == 2

    config = first / "operative_config.gin"
    assert "train.epochs = 2" in config.read_text()
    again = tmp_path / "again"
    result = run_resnet(again, "--mode=train_and_eval", f"--gin_file={config}", env=cli_env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (again / "operative_config.gin").read_text() == config.read_text()
    rerun = latest_record(again)
    assert rerun["epochs"] == 2
    for mine, theirs in zip(rerun["eval_curve"], record["eval_curve"], strict=True):
        assert mine["top_1_accuracy"] == pytest.approx(theirs["top_1_accuracy"], abs=0.02)
