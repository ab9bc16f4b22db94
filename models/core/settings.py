"""Train and evaluation settings every recipe sets through gin, and the step plan of one run.

`train.steps = 1000` (or `train.epochs`, `train.examples`), `train.global_batch_size = 256`;
named evaluations (big_vision's `config.evals`), each with its own split, cadence and batch:

    train.evaluations = {"loss": @loss/evaluation(), "bleu": @bleu/evaluation()}
    loss/evaluation.every_steps = 1000
    bleu/evaluation.every_steps = 5000
    bleu/evaluation.batch_size = 64

Without `train.evaluations` there is one evaluation named `validation` (bindings
`evaluation.*`), every epoch when the dataset's size is known, else at the end of training.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import gin

from models.core.durations import Clock
from models.core.errors import UsageError
from models.core.gin_types import check_field_types

DEFAULT_EVALUATION = "validation"


@gin.configurable("evaluation")
@dataclass
class EvalSettings:
    """One evaluation: the split it reads, how often it runs, its global batch and its kind
    (what the task computes; default: the evaluation's name)."""

    split: str = "validation"
    kind: str | None = None
    every_steps: int | None = None
    every_epochs: float | None = None
    every_examples: int | None = None
    batch_size: int | None = None

    def __post_init__(self):
        check_field_types(self, "evaluation")


@gin.configurable("train")
@dataclass
class TrainSettings:
    """Global batch, training length, evaluations, checkpoints, init checkpoint, target.

    `also_reach` names further metrics that must reach their values too before a run stops at
    its target (MLPerf's Mask R-CNN: box AP 0.377 and mask AP 0.339); records and the MLPerf
    log report the target metric's value."""

    global_batch_size: int = 256
    steps: int | None = None
    epochs: float | None = None
    examples: int | None = None
    evaluations: dict[str, EvalSettings] | None = None
    steps_per_loop: int | None = None
    checkpoint_every_steps: int | None = None
    max_checkpoints_to_keep: int = 5
    jit_compile: bool = False
    synthetic_input: bool = False
    init_checkpoint: str | None = None
    init_checkpoint_modules: tuple[str, ...] = ()
    target_metric: str | None = None
    target_value: float | None = None
    also_reach: dict[str, float] | None = None
    continuous_eval_timeout_s: float = 3600.0

    def __post_init__(self):
        check_field_types(self, "train")
        if self.max_checkpoints_to_keep < 1:
            raise UsageError(
                f"train.max_checkpoints_to_keep = {self.max_checkpoints_to_keep}: keep at least "
                "1 (a run resumes from its latest checkpoint)"
            )
        if self.evaluations is None:
            self.evaluations = {DEFAULT_EVALUATION: EvalSettings()}
        _check_evaluations(self.evaluations)

    def check(self, replicas: int) -> None:
        """Every global batch must split evenly over the replicas."""
        batches = {"train.global_batch_size": self.global_batch_size}
        for name, evaluation in self.evaluations.items():
            batches[f"{name}/evaluation.batch_size"] = evaluation.batch_size
        for name, value in batches.items():
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UsageError(f"{name}={value!r}: expected a positive whole number")
            if value % replicas:
                raise UsageError(f"{name}={value} does not split evenly over {replicas} replicas")


def _check_evaluations(evaluations: object) -> None:
    if not isinstance(evaluations, dict) or not evaluations:
        raise UsageError(
            "train.evaluations must map names to evaluations, e.g. "
            "{'validation': @validation/evaluation()}"
        )
    for name, value in evaluations.items():
        if not isinstance(name, str) or not name or "/" in name:
            raise UsageError(f"train.evaluations: '{name}' is not a valid evaluation name")
        if not isinstance(value, EvalSettings):
            raise UsageError(
                f"train.evaluations['{name}'] must be @{name}/evaluation(), got {value!r}"
            )


@dataclass(frozen=True)
class EvalPlan:
    """One named evaluation as run: its split, kind, global batch, cadence and length."""

    name: str
    kind: str
    split: str
    global_batch_size: int
    interval: int  # training steps between two runs of this evaluation
    steps: int  # eval steps per run; -1: until the split's dataset ends

    def metric_name(self, metric: str) -> str:
        """How a metric of this evaluation is reported: bare for `validation`, else name/metric."""
        return metric if self.name == DEFAULT_EVALUATION else f"{self.name}/{metric}"


@dataclass(frozen=True)
class StepPlan:
    """The step arithmetic of one run, from the settings and the dataset sizes."""

    clock: Clock
    total_steps: int
    steps_per_loop: int
    checkpoint_interval: int
    evaluations: dict[str, EvalPlan]

    @property
    def global_batch_size(self) -> int:
        return self.clock.global_batch_size

    @property
    def steps_per_epoch(self) -> int | None:
        return self.clock.steps_per_epoch

    @classmethod
    def make(
        cls,
        settings: TrainSettings,
        train_examples: int | None,
        examples: Callable[[str], int | None],
    ) -> StepPlan:
        """examples(split) gives a split's size (None: unknown, then lengths are in steps)."""
        clock = _clock(settings.global_batch_size, train_examples)
        names = ("train.steps", "train.epochs", "train.examples")
        total = clock.steps(names, settings.steps, settings.epochs, settings.examples, True)
        if not total:
            raise UsageError("set the training length: train.steps, train.epochs or train.examples")
        evaluations = {
            name: _eval_plan(name, evaluation, settings, clock, total, examples)
            for name, evaluation in settings.evaluations.items()
        }
        interval = min(e.interval for e in evaluations.values())
        return cls(
            clock=clock,
            total_steps=total,
            steps_per_loop=settings.steps_per_loop or min(interval, 1000),
            checkpoint_interval=settings.checkpoint_every_steps or interval,
            evaluations=evaluations,
        )

    def epoch(self, step: int) -> float | None:
        return self.clock.epoch(step)

    def next_stop(self, step: int) -> int:
        """The next step after `step` at which an evaluation is due, or the last step."""
        due = [(step // e.interval + 1) * e.interval for e in self.evaluations.values()]
        return min([*due, self.total_steps])

    def due(self, step: int) -> list[EvalPlan]:
        """The evaluations that run at `step` (every one of them at the last step)."""
        final = step >= self.total_steps
        return [e for e in self.evaluations.values() if final or step % e.interval == 0]


def _clock(global_batch_size: int, train_examples: int | None) -> Clock:
    if train_examples is None:
        return Clock(global_batch_size, None)
    steps_per_epoch = train_examples // global_batch_size
    if steps_per_epoch < 1:
        raise UsageError(
            f"train.global_batch_size={global_batch_size} exceeds the "
            f"{train_examples} training examples"
        )
    return Clock(global_batch_size, steps_per_epoch)


def _eval_plan(
    name: str,
    evaluation: EvalSettings,
    settings: TrainSettings,
    clock: Clock,
    total_steps: int,
    examples: Callable[[str], int | None],
) -> EvalPlan:
    scope = "evaluation" if name == DEFAULT_EVALUATION else f"{name}/evaluation"
    names = tuple(f"{scope}.every_{unit}" for unit in ("steps", "epochs", "examples"))
    interval = clock.steps(
        names, evaluation.every_steps, evaluation.every_epochs, evaluation.every_examples
    )
    if interval is None:
        interval = clock.steps_per_epoch or total_steps
    if interval < 1:
        raise UsageError(f"{scope}.every_*: evaluations must be at least one step apart")
    batch = evaluation.batch_size or settings.global_batch_size
    size = examples(evaluation.split)
    return EvalPlan(
        name=name,
        kind=evaluation.kind or name,
        split=evaluation.split,
        global_batch_size=batch,
        interval=interval,
        steps=-1 if size is None else math.ceil(size / batch),
    )
