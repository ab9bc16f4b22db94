"""`python -m models.resnet` as a user would run it, in a subprocess."""

from __future__ import annotations

import functools

from zoo_testing import checkpoint_files, latest_record, model_command, run_model

resnet_command = functools.partial(model_command, "resnet")
run_resnet = functools.partial(run_model, "resnet")

__all__ = ["checkpoint_files", "latest_record", "resnet_command", "run_resnet"]
