"""The run's --model_dir: created when missing, and refused in one line where something
stands in the way of what a run writes there (a directory where a file goes)."""

from __future__ import annotations

import tensorflow as tf

from models.core.errors import UsageError, first_line
from models.core.gin_config import OPERATIVE_CONFIG
from models.core.records import RECORDS_DIR
from models.core.run_lock import LOCK_NAME

CHECKPOINT_STATE = "checkpoint"  # TensorFlow's name for the checkpoint state file
FILES = (CHECKPOINT_STATE, LOCK_NAME, OPERATIVE_CONFIG)
FOLDERS = (RECORDS_DIR, "summaries", "evaluations", "export")


def prepare_model_dir(model_dir: str) -> None:
    """Creates --model_dir (any filesystem TensorFlow knows), or says why it cannot; then
    checks that each file a run writes there is not a directory, and each folder not a file."""
    try:
        tf.io.gfile.makedirs(model_dir)
    except (tf.errors.OpError, OSError) as error:
        raise UsageError(
            f"--model_dir={model_dir}: cannot create it: {first_line(error)}"
        ) from None
    if not tf.io.gfile.isdir(model_dir):
        raise UsageError(f"--model_dir={model_dir}: not a directory")
    root = model_dir.rstrip("/")
    for name in FILES:
        if tf.io.gfile.isdir(f"{root}/{name}"):
            raise UsageError(
                f"{root}/{name} is a directory where a run keeps a file: move it out of the way"
            )
    for name in FOLDERS:
        path = f"{root}/{name}"
        if tf.io.gfile.exists(path) and not tf.io.gfile.isdir(path):
            raise UsageError(f"{path} is a file where a run keeps a folder: move it out of the way")
