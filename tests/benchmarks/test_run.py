"""The harness: one process per (slice, repeat), every run indexed, a missed target kept."""

from __future__ import annotations

import json
import subprocess

import pytest
from zoo_testing import PYTHON, REPO

from benchmarks.records import INDEX, RunResult, load_runs
from benchmarks.run import _render, describe, error_line


def _harness(*args: str, env: dict) -> subprocess.CompletedProcess:
    command = [PYTHON, "-m", "benchmarks.run", "--recipe=resnet/default", *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=env, timeout=600)


def _result(**fields) -> RunResult:
    base = {"family": "asr", "model": "asr_small", "recipe": "default", "slice": "cpu-1"}
    return RunResult(**{**base, "repeat": 0, "status": "success", **fields})


@pytest.mark.slow
def test_run_that_misses_target_is_recorded_aborted(tmp_path, cli_env):
    # One epoch cannot reach 99.9% top-1: the run must be indexed as aborted.
    result = _harness(
        "--model=resnet10",
        "--slices=cpu-2",
        "--repeats=1",
        f"--out={tmp_path}",
        "--json",
        "--gin_param=train.epochs = 1",
        "--gin_param=train.target_value = 0.999",
        env=cli_env,
    )
    assert result.returncode == 1, result.stderr[-3000:]  # a run aborted
    summary = json.loads(result.stdout)
    assert (summary["runs"], summary["succeeded"], summary["aborted"]) == (1, 0, 1)
    assert summary["failures"] == [{"slice": "cpu-2", "seed": 0, "error": "target not reached"}]
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
        "top_1_accuracy >= 0.999",
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


@pytest.mark.slow
def test_a_run_that_fails_makes_the_harness_exit_1_and_say_why(tmp_path, cli_env):
    result = _harness("--slices=cpu-3", "--repeats=1", f"--out={tmp_path}", env=cli_env)
    assert result.returncode == 1, result.stderr[-3000:]
    why = "error: train.global_batch_size=64 does not split evenly over 3 replicas"
    assert f"[1/1] resnet/default resnet18 cpu-3 seed 0: ABORTED: {why}" in result.stderr
    (line,) = result.stdout.splitlines()
    assert line.startswith(f"resnet/default (resnet18): 0/1 runs succeeded, 1 aborted (1 x {why});")
    (entry,) = [json.loads(x) for x in (tmp_path / INDEX).read_text().splitlines()]
    assert (entry["exit_code"], entry["error"]) == (2, why)


def test_summary_line_counts_aborted_runs_by_reason():
    summary = {"recipe": "resnet/default", "model": "resnet18", "runs": 4, "succeeded": 1}
    summary.update(out="OUT", aborted=3)
    summary["failures"] = [
        {"slice": "cpu-1", "seed": 0, "error": "target not reached"},
        {"slice": "cpu-3", "seed": 0, "error": "error: boom"},
        {"slice": "cpu-3", "seed": 1, "error": "error: boom"},
    ]
    assert _render(summary) == (
        "resnet/default (resnet18): 1/4 runs succeeded, 3 aborted (2 x error: boom; "
        "1 x target not reached); records in OUT (python -m benchmarks.report OUT)"
    )
    summary.update(succeeded=4, aborted=0, failures=[])
    assert _render(summary).startswith("resnet/default (resnet18): 4/4 runs succeeded; records")


def test_error_line_is_the_first_line_of_the_error():
    assert error_line("W tf noise\nerror: bad flag\n", 2) == "error: bad flag"
    traceback = (
        "Traceback (most recent call last):\n"
        '  File "x.py", line 1, in <module>\n'
        "    main()\n"
        "ValueError: first line\n"
        "second line of the message\n"
    )
    assert error_line(traceback, 1) == "ValueError: first line"
    assert error_line("Killed\n", 137) == "Killed"
    assert error_line("", -9) == "killed by signal 9"
    assert error_line("", 3) == "exit code 3"
    assert error_line("W noise\n", 143).startswith("preempted (exit code 143): rerun with")


def test_progress_says_a_run_resumed():
    run = _result(time_to_accuracy_s=9.0, epochs=8.0, target_metric="top_1_accuracy")
    run.target_value, run.target_direction = 0.97, "higher"
    run.resumed, run.resumed_from_step, run.segments = True, 120, [{}, {}]
    assert describe(run) == (
        "9.0 s to top_1_accuracy >= 0.97 (epoch 8, resumed at step 120, 2 segments)"
    )
