"""Checkpoints that survive preemption: interval saves, resume, save-on-SIGTERM, NaN abort."""

from __future__ import annotations

import math
import signal

import tensorflow as tf


class TrainingAborted(Exception):
    """Training cannot go on (non-finite loss); the last good checkpoint is kept."""


class Preempted(Exception):
    """SIGTERM arrived; a checkpoint was saved at `step`."""

    def __init__(self, step: int):
        super().__init__(step)
        self.step = step


def build_manager(
    model_dir: str, global_step: tf.Variable, interval: int, max_to_keep: int, **trackables
) -> tf.train.CheckpointManager:
    """A CheckpointManager over every model and optimiser; saves are atomic (temp + rename)."""
    checkpoint = tf.train.Checkpoint(global_step=global_step, **trackables)
    return tf.train.CheckpointManager(
        checkpoint,
        model_dir,
        max_to_keep=max_to_keep,
        step_counter=global_step,
        checkpoint_interval=interval,
    )


class NanGuard:
    """orbit train action: aborts before the loop's checkpoint when the loss is NaN/Inf."""

    def __init__(self, global_step: tf.Variable):
        self.global_step = global_step

    def __call__(self, output: dict) -> None:
        loss = float(output.get("loss", 0.0))
        if not math.isfinite(loss):
            raise TrainingAborted(
                f"loss is {loss} at step {int(self.global_step.numpy())}: training diverged; "
                "the last good checkpoint is kept (lower the learning rate or check the data)"
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
