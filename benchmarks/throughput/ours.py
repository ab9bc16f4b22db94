"""The project's side: the recipe's own task and core Trainer, fed by the task's synthetic input
(`train.synthetic_input = True`), timed."""

from __future__ import annotations

import inspect

import tensorflow as tf
import tf_keras

from benchmarks.recipes import Recipe
from benchmarks.throughput import measure
from models.core.durations import Clock
from models.core.recipe import RunSpec
from models.core.settings import StepPlan, TrainSettings
from models.core.strategy import check_jit_compile
from models.core.task import Models, Task
from models.core.trainer import Trainer, build_training_state

# The learning-rate schedule needs a plan; without data there is no real epoch length, and
# these values do not change the work of a step.
NOMINAL_STEPS_PER_EPOCH = 1000
NOMINAL_TOTAL_STEPS = 100_000
# Families whose throughput is also counted in tokens: their examples are sentence pairs padded
# to a length (translation's B x max_length tokens a batch).
TOKEN_FAMILIES = ("transformer",)


def nominal_plan(global_batch_size: int) -> StepPlan:
    """A step plan for building the recipe's schedules and optimisers, with no evaluations."""
    clock = Clock(global_batch_size, NOMINAL_STEPS_PER_EPOCH)
    total = NOMINAL_TOTAL_STEPS
    return StepPlan(clock, total, total, total, evaluations={})


def build_task(recipe: Recipe, data_dir: str | None = None) -> Task:
    """The recipe's task (`run.task`) for its variant, as `python -m models.<family>` builds it."""
    return RunSpec().check().task(model=recipe.model, data_dir=data_dir, seed=0)


def build_trainer(recipe: Recipe, strategy: tf.distribute.Strategy) -> Trainer:
    """The core Trainer with the recipe's models, optimisers and weight averages, as
    models.core.experiment builds them, on the task's synthetic input."""
    settings = TrainSettings()
    settings.check(strategy.num_replicas_in_sync)
    check_jit_compile(settings.jit_compile, strategy)
    task = build_task(recipe)
    state = build_training_state(task, strategy, nominal_plan(settings.global_batch_size))
    batch, xla, synthetic = settings.global_batch_size, settings.jit_compile, True
    return Trainer(task, strategy, state, batch, jit_compile=xla, synthetic_input=synthetic)


def describe_synthetic_input(task: Task) -> str:
    """What the task's synthetic input is: `Class.synthetic_inputs` and its docstring."""
    doc = inspect.getdoc(task.synthetic_inputs) or ""
    return f"{type(task).__name__}.synthetic_inputs: {' '.join(doc.split(chr(10) * 2)[0].split())}"


def input_shape(model: tf_keras.Model) -> list[int] | None:
    """The shape of one example of the model's single input; None for several or unknown."""
    shape = getattr(model, "input_shape", None)  # a list of shapes for several inputs
    if not isinstance(shape, tuple) or None in shape[1:]:
        return None
    return list(shape[1:])


def flops_per_example(models: Models, task: Task) -> int | None:
    """Training FLOPs of one example when the task trains one model with one fixed-size input,
    or with a dict of them, which its synthetic input gives (BERT's token ids); None otherwise:
    no single per-example count."""
    if len(models) != 1:
        return None
    (model,) = models.values()
    shape = input_shape(model)
    if shape is not None:
        return measure.training_flops_per_example(model, shape)
    features = task.synthetic_inputs(1, tf.distribute.InputContext()).element_spec
    if not isinstance(features, dict):
        return None
    return measure.training_flops_per_example(model, features)


def tokens_per_batch(recipe: Recipe, trainer: Trainer) -> int | None:
    """Padded tokens a side of one global synthetic batch (replicas x rows x length of its
    "targets") for the families in TOKEN_FAMILIES; None for the others."""
    if recipe.family not in TOKEN_FAMILIES:
        return None
    replicas = trainer.strategy.num_replicas_in_sync
    context = tf.distribute.InputContext(num_replicas_in_sync=replicas)
    spec = trainer.task.synthetic_inputs(trainer.global_batch_size, context).element_spec
    rows, length = spec["targets"].shape.as_list()
    return replicas * rows * length


def measure_ours(trainer: Trainer, recipe: Recipe, warmup_steps: int, steps: int) -> dict:
    """examples/s, ms/step, params and FLOPs/example of the project's own train step."""
    seconds = measure.time_orbit_trainer(trainer, warmup_steps, steps)
    optimizers = ", ".join(measure.class_name(o) for o in trainer.optimizers.values())
    return {
        "name": f"this project: configs/{recipe.path}.gin ({recipe.model}), models.core Trainer",
        **measure.rates(seconds, steps, trainer.global_batch_size),
        "params": sum(int(model.count_params()) for model in trainer.models.values()),
        "flops_per_example": flops_per_example(trainer.models, trainer.task),
        "xla": TrainSettings().jit_compile,
        "optimizer": optimizers,
    }
