"""Which checkpoint a run resumes from when the state file is damaged, stale or missing."""

from __future__ import annotations

import pytest
import tensorflow as tf

from models.core import checkpoint as ckpt
from models.core.errors import UsageError


def _save_steps(model_dir, *steps: int) -> None:
    """ckpt-<step> for each step, through a CheckpointManager, as a run writes them."""
    step = tf.Variable(0, dtype=tf.int64)
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(step=step), str(model_dir), 5)
    for value in steps:
        step.assign(value)
        manager.save(checkpoint_number=value)


def _resume(model_dir) -> tuple[str | None, str | None]:
    point, note = ckpt.resume_point(str(model_dir))
    return (point.rsplit("/", 1)[-1] if point else None), note


def test_an_intact_state_file_is_followed_silently(tmp_path):
    _save_steps(tmp_path, 22, 44)
    assert _resume(tmp_path) == ("ckpt-44", None)


@pytest.mark.parametrize(
    "state, why",
    [
        (b"\x00\xffgarbage{{", "is damaged"),
        (b'model_checkpoint_path: "ckpt-66"\n', "names"),
        (None, "is missing"),
    ],
)
def test_an_untrusted_state_file_resumes_from_the_newest_intact_checkpoint(tmp_path, state, why):
    _save_steps(tmp_path, 22, 44)
    if state is None:
        (tmp_path / "checkpoint").unlink()
    else:
        (tmp_path / "checkpoint").write_bytes(state)
    point, note = _resume(tmp_path)
    assert point == "ckpt-44"
    assert why in note and "resuming from" in note


@pytest.mark.parametrize("missing", ["ckpt-44.index", "ckpt-44.data-00000-of-00001"])
def test_a_newest_checkpoint_missing_a_file_is_one_line_naming_it(tmp_path, missing):
    _save_steps(tmp_path, 22, 44)
    (tmp_path / missing).unlink()
    with pytest.raises(UsageError, match="ckpt-44 is incomplete.*resume from .*ckpt-22"):
        ckpt.resume_point(str(tmp_path))


def test_a_state_file_behind_the_newest_checkpoint_is_overruled(tmp_path):
    _save_steps(tmp_path, 22, 44)
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "ckpt-22"\n')
    point, note = _resume(tmp_path)
    assert point == "ckpt-44" and "newer than" in note


def test_an_empty_dir_starts_fresh(tmp_path):
    assert ckpt.resume_point(str(tmp_path)) == (None, None)
