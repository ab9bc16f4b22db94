"""The default ResNet recipe trained to its target once per pytest worker, for every test that
reads such a run (each marked `SHARES_TRAINED_RUN`: one xdist group, so one worker trains it)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

import pytest
from cli import latest_record, run_resnet
from zoo_testing import REPO


class TrainedRun(NamedTuple):
    model_dir: Path
    stdout: str
    env: dict[str, str]
    record: dict  # its run record as first written (a rerun adds a newer one)


@pytest.fixture(scope="session")
def trained(tmp_path_factory, digits_dir) -> TrainedRun:
    """`python -m models.resnet --model_dir=DIR`: the default recipe to its target."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    model_dir = tmp_path_factory.mktemp("trained")
    result = run_resnet(model_dir, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    return TrainedRun(model_dir, result.stdout, env, latest_record(model_dir))
