"""`python -m models.resnet` as a user would run it, in a subprocess."""

from __future__ import annotations

import functools

import pytest
from zoo_testing import checkpoint_files, latest_record, model_command, run_model

resnet_command = functools.partial(model_command, "resnet")
run_resnet = functools.partial(run_model, "resnet")
# Tests that read conftest.py's `trained` run: one xdist group, so one worker trains it.
SHARES_TRAINED_RUN = pytest.mark.xdist_group("resnet_trained_run")

__all__ = [
    "SHARES_TRAINED_RUN",
    "checkpoint_files",
    "latest_record",
    "resnet_command",
    "run_resnet",
]
