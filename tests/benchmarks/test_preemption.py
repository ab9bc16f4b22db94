"""benchmarks.preemption (README, "Preemption, measured"): what a trial counts as a pass, its
table, and bad flags in one line. The measurement itself is a command, not a test."""

from __future__ import annotations

import subprocess

import pytest
from zoo_testing import PYTHON, REPO

from benchmarks import preemption

TRIAL = {"trial": 0, "delay_s": 3.0, "stop_s": 0.5, "exit_code": 143, "saved_step": 8}


@pytest.mark.parametrize(
    "changes, passes",
    [
        ({"resumed": True}, True),
        ({"resumed": None, "saved_step": 0}, True),  # stopped before step 1: nothing to resume
        ({"resumed": False}, False),
        ({"resumed": True, "exit_code": 0}, False),  # ran on: the signal was ignored
        ({"resumed": True, "in_evaluation": False}, False),  # came after the evaluation
    ],
)
def test_a_trial_passes_when_it_exits_143_and_the_rerun_resumes(changes, passes):
    result = {"recipe": "deeplab/default", "phase": "train", "trials": [{**TRIAL, **changes}]}
    assert (preemption.exit_code(result) == 0) is passes
    assert preemption.render(result).endswith("slowest stop: 0.5 s")


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--trials=0"], "--trials must be at least 1 and --window_s not negative"),
        (["--from_model_dir=/nowhere", "--from_step=5"], "--from_model_dir=/nowhere has no ckpt-5"),
    ],
)
def test_bad_flags_are_one_line(flags, message):
    command = [PYTHON, "-m", "benchmarks.preemption", *flags]
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=300)
    assert result.returncode == 2 and result.stderr.strip() == f"error: {message}"
