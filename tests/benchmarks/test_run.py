"""The harness: one process per (slice, repeat), every run indexed, a missed target kept."""

from __future__ import annotations

import json
import subprocess

from zoo_testing import PYTHON, REPO

from benchmarks.records import load_runs


def _harness(*args: str, env: dict) -> subprocess.CompletedProcess:
    command = [PYTHON, "-m", "benchmarks.run", "--model=resnet", "--recipe=default", *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=env, timeout=600)


def test_run_that_misses_target_is_recorded_aborted(tmp_path, cli_env):
    # One epoch cannot reach an impossible target: the run must be indexed as aborted.
    result = _harness(
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
    assert "[1/1] resnet default cpu-2 seed 0: ABORTED: target not reached" in result.stderr
    (run,) = load_runs(tmp_path)
    assert run.status == "aborted" and run.replicas == 2 and run.global_batch_size == 64
    log = next((tmp_path / "resnet/default/cpu-2/run-0/records").glob("*.mlperf.log")).read_text()
    assert '"status": "aborted"' in log


def test_tpu_slice_without_tpu_is_one_line_exit_2(tmp_path, cli_env):
    result = _harness("--slices=v3-8", f"--out={tmp_path}", env=cli_env)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: --slices=v3-8 is a TPU slice: pass --tpu as well"
    ]


def test_unknown_recipe_lists_the_known_ones(tmp_path, cli_env):
    result = _harness("--recipe=nope", f"--out={tmp_path}", env=cli_env)
    assert result.returncode == 2
    assert "default, resnet50_imagenet, resnet50_imagenet_lars" in result.stderr
