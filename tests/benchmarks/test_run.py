"""The harness: one process per (slice, repeat), every run indexed, a missed target kept."""

from __future__ import annotations

import json
import subprocess

import pytest
from zoo_testing import PYTHON, REPO

from benchmarks.records import INDEX, RunResult, load_runs
from benchmarks.run import describe


def _harness(*args: str, env: dict) -> subprocess.CompletedProcess:
    command = [PYTHON, "-m", "benchmarks.run", "--recipe=resnet/default", *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=env, timeout=600)


def _result(**fields) -> RunResult:
    base = {"family": "asr", "model": "asr_small", "recipe": "default", "slice": "cpu-1"}
    return RunResult(**{**base, "repeat": 0, "status": "success", **fields})


@pytest.mark.slow
def test_run_that_misses_target_is_recorded_aborted(tmp_path, cli_env):
    # One epoch cannot reach an impossible target: the run must be indexed as aborted.
    result = _harness(
        "--model=resnet10",
        "--slices=cpu-2",
        "--repeats=1",
        f"--out={tmp_path}",
        "--json",
        "--gin_param=train.epochs = 1",
        "--gin_param=train.target_value = 1.5",
        env=cli_env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout)
    assert (summary["runs"], summary["succeeded"], summary["aborted"]) == (1, 0, 1)
    assert (summary["recipe"], summary["model"]) == ("resnet/default", "resnet10")
    line = "[1/1] resnet/default resnet10 cpu-2 seed 0: ABORTED: target not reached"
    assert line in result.stderr
    (entry,) = [json.loads(x) for x in (tmp_path / INDEX).read_text().splitlines()]
    assert (entry["family"], entry["model"], entry["recipe"]) == ("resnet", "resnet10", "default")
    assert '--gin_param=run.model = "resnet10"' in entry["command"]
    (run,) = load_runs(tmp_path)
    assert run.status == "aborted" and run.replicas == 2 and run.global_batch_size == 64
    assert (run.family, run.model, str(run.target)) == (
        "resnet",
        "resnet10",
        "top_1_accuracy >= 1.5",
    )
    records = tmp_path / "resnet/default/resnet10/cpu-2/run-0/records"
    assert '"status": "aborted"' in next(records.glob("*.mlperf.log")).read_text()


def test_progress_follows_the_target_direction():
    lower = _result(time_to_accuracy_s=12.34, epochs=3.0)
    lower.target_metric, lower.target_value, lower.target_direction = "wer", 0.2, "lower"
    assert describe(lower) == "12.3 s to wer <= 0.2 (epoch 3)"
    higher = _result(time_to_accuracy_s=5.0, steps=40, target_metric="top_1_accuracy")
    higher.target_value, higher.target_direction = 0.97, "higher"
    assert describe(higher) == "5.0 s to top_1_accuracy >= 0.97 (step 40)"
    assert describe(_result(steps=100)) == "finished, no target (step 100)"
    assert describe(_result(status="aborted", error="boom")) == "ABORTED: boom"


def test_tpu_slice_without_tpu_is_one_line_exit_2(tmp_path, cli_env):
    result = _harness("--slices=v3-8", f"--out={tmp_path}", env=cli_env)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: --slices=v3-8 is a TPU slice: pass --tpu as well"
    ]


def test_a_family_as_model_is_one_line_exit_2(tmp_path, cli_env):
    result = _harness("--model=resnet", f"--out={tmp_path}", env=cli_env)
    assert result.returncode == 2 and result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: --model=resnet is a family: --model names a variant")
