"""Train/eval settings every recipe sets through gin (`train.epochs = 44`, ...)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import gin

from models.core.errors import UsageError


@gin.configurable("train")
@dataclass
class TrainSettings:
    """Global batch, schedule length, eval cadence, checkpointing and stop-at-target."""

    global_batch_size: int = 256
    eval_batch_size: int | None = None
    epochs: float = 90.0
    eval_every_epochs: float = 1.0
    steps_per_loop: int | None = None
    checkpoint_every_steps: int | None = None
    max_checkpoints_to_keep: int = 5
    jit_compile: bool = False
    target_metric: str | None = None
    target_value: float | None = None
    continuous_eval_timeout_s: float = 3600.0

    def check(self, replicas: int) -> None:
        """The global batch must split evenly over the replicas."""
        for name in ("global_batch_size", "eval_batch_size"):
            value = getattr(self, name) or self.global_batch_size
            if value < replicas or value % replicas:
                raise UsageError(
                    f"train.{name}={value} does not split evenly over {replicas} replicas"
                )
        if self.epochs <= 0 or self.eval_every_epochs <= 0:
            raise UsageError("train.epochs and train.eval_every_epochs must be positive")


@dataclass(frozen=True)
class StepPlan:
    """The step arithmetic of one run, derived from settings and dataset sizes."""

    steps_per_epoch: int
    total_steps: int
    eval_interval: int
    eval_steps: int
    steps_per_loop: int
    checkpoint_interval: int

    @classmethod
    def make(cls, settings: TrainSettings, train_examples: int, eval_examples: int) -> StepPlan:
        spe = train_examples // settings.global_batch_size
        if spe < 1:
            raise UsageError(
                f"train.global_batch_size={settings.global_batch_size} exceeds the "
                f"{train_examples} training examples"
            )
        eval_batch = settings.eval_batch_size or settings.global_batch_size
        interval = max(1, round(settings.eval_every_epochs * spe))
        loop = settings.steps_per_loop or min(interval, 1000)
        return cls(
            steps_per_epoch=spe,
            total_steps=math.ceil(settings.epochs * spe),
            eval_interval=interval,
            eval_steps=math.ceil(eval_examples / eval_batch),
            steps_per_loop=loop,
            checkpoint_interval=settings.checkpoint_every_steps or interval,
        )

    def epoch(self, step: int) -> float:
        return round(step / self.steps_per_epoch, 3)
