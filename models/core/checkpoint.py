"""Checkpoints that survive preemption: interval saves, resume, save-on-SIGTERM, NaN abort."""

from __future__ import annotations

import contextlib
import math
import signal
from collections.abc import Callable

import tensorflow as tf

from models.core.errors import UsageError, first_line


class TrainingAborted(Exception):
    """Training cannot go on (non-finite loss); the last good checkpoint is kept."""


class Preempted(Exception):
    """SIGTERM arrived; a checkpoint was saved at `step`."""

    def __init__(self, step: int):
        super().__init__(step)
        self.step = step


def build_manager(
    model_dir: str,
    global_step: tf.Variable,
    interval: int,
    max_to_keep: int,
    init_fn: Callable[[], None] | None = None,
    **trackables,
) -> tf.train.CheckpointManager:
    """A CheckpointManager over every model and optimiser; saves are atomic (temp + rename).
    `init_fn` runs instead of a restore when model_dir has no checkpoint yet."""
    checkpoint = tf.train.Checkpoint(global_step=global_step, **trackables)
    return tf.train.CheckpointManager(
        checkpoint,
        model_dir,
        max_to_keep=max_to_keep,
        step_counter=global_step,
        checkpoint_interval=interval,
        init_fn=init_fn,
    )


@contextlib.contextmanager
def checkpoint_must_fit(model_dir: str):
    """A checkpoint in model_dir that does not fit the built model (another model or recipe)
    or cannot be read becomes one UsageError line; the checkpoint is left as it is."""
    try:
        yield
    except (ValueError, tf.errors.InvalidArgumentError) as error:
        fix = "use the recipe that wrote it, or a fresh --model_dir"
        raise _unusable(model_dir, error, "does not fit this model and recipe", fix) from None
    except (tf.errors.DataLossError, tf.errors.NotFoundError, IndexError) as error:
        fix = "restore an intact copy, or use a fresh --model_dir"
        raise _unusable(model_dir, error, "cannot be read", fix) from None


def _unusable(model_dir: str, error: Exception, what: str, fix: str) -> Exception:
    latest = tf.train.latest_checkpoint(model_dir)
    if latest is None:
        return error
    tf.get_logger().setLevel("ERROR")  # else the failed restore warns at exit, per value
    reason = first_line(error)
    return UsageError(f"--model_dir={model_dir}: checkpoint {latest} {what} ({reason}); {fix}")


class NanGuard:
    """orbit train action: aborts before the loop's checkpoint when a train log (a loss) is
    NaN/Inf."""

    def __init__(self, global_step: tf.Variable):
        self.global_step = global_step

    def __call__(self, output: dict) -> None:
        for name, value in output.items():
            if not math.isfinite(float(value)):
                raise TrainingAborted(
                    f"{name} is {float(value)} at step {int(self.global_step.numpy())}: "
                    "training diverged; the last good checkpoint is kept (lower the learning "
                    "rate or check the data)"
                )


class PreemptionWatcher:
    """orbit train action: on SIGTERM, saves a checkpoint at the next loop boundary, then stops."""

    def __init__(self, manager: tf.train.CheckpointManager, global_step: tf.Variable):
        self.manager, self.global_step = manager, global_step
        self.requested = False
        signal.signal(signal.SIGTERM, self._on_sigterm)

    def _on_sigterm(self, signum, frame) -> None:
        self.requested = True

    def __call__(self, output: dict | None = None) -> None:
        if self.requested:
            step = int(self.global_step.numpy())
            if step > 0:
                self.manager.save(checkpoint_number=step, check_interval=False)
            raise Preempted(step)


class ClusterPreemption:
    """orbit train action for multi-worker runs: TensorFlow's PreemptionCheckpointHandler.

    A SIGTERM on any worker makes every worker save at the same step (the handler agrees on
    it through the coordination service); then the run stops as a Preempted one (exit 143).
    Create it under the strategy scope, after restoring the chief's latest checkpoint."""

    def __init__(self, strategy, manager: tf.train.CheckpointManager, global_step: tf.Variable):
        self.global_step = global_step
        config = tf.distribute.experimental.TerminationConfig(exit_fn=self._stop)
        self.handler = tf.distribute.experimental.PreemptionCheckpointHandler(
            strategy.cluster_resolver, manager, termination_config=config
        )

    def _stop(self) -> None:
        raise Preempted(int(self.global_step.numpy()))

    def __call__(self, output: dict | None = None) -> None:
        step = int(self.global_step.numpy())
        self.handler.save_checkpoint_if_preempted(checkpoint_number=step, check_interval=False)
