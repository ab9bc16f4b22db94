"""The project's side: load a recipe with gin and time its own orbit Trainer on synthetic data."""

from __future__ import annotations

import importlib
from dataclasses import dataclass

import gin
import orbit
import tensorflow as tf
import tf_keras

import models
from benchmarks import throughput_measure as measure
from models.core import gin_config, optimization
from models.core.errors import UsageError, nearest
from models.core.precision import set_precision
from models.core.settings import TrainSettings
from models.core.tasks.image_classification import ImageClassificationTask
from models.core.trainer import Trainer
from models.registry import model_entry

# The task each model family trains (its __main__ passes the same class to core's main()).
TASKS = {"resnet": ImageClassificationTask}
# The learning-rate schedule needs a plan; its values do not change the work of a step.
SCHEDULE_STEPS = {"steps_per_epoch": 1000, "total_steps": 100_000}


@dataclass(frozen=True)
class Recipe:
    """What one benchmark run compares: family, recipe, global batch and precision."""

    model: str
    recipe: str
    batch: int
    precision: str


def families() -> list[str]:
    """Model families that have a registered model."""
    return sorted({model_entry(name).family for name in models.list_models()})


def check(recipe: Recipe) -> None:
    """UsageError for an unknown family or recipe, an unsupported family or batch < 1."""
    known = families()
    if recipe.model not in known:
        raise UsageError(f"unknown model '{recipe.model}'{nearest(recipe.model, known)}")
    if recipe.model not in TASKS:
        raise UsageError(f"--model={recipe.model}: throughput supports {', '.join(TASKS)}")
    recipes = models.list_recipes(recipe.model)
    if recipe.recipe not in recipes:
        raise UsageError(
            f"unknown recipe '{recipe.recipe}' for {recipe.model}"
            f"{nearest(recipe.recipe, recipes)} (have: {', '.join(recipes)})"
        )
    if recipe.batch < 1:
        raise UsageError(f"--batch must be at least 1, got {recipe.batch}")


def configure(recipe: Recipe, gin_params: list[str]) -> None:
    """Registers the family's configurables, parses its recipe with the batch, sets precision."""
    check(recipe)
    importlib.import_module(f"models.{recipe.model}.model")
    gin.clear_config()
    bindings = [f"train.global_batch_size = {recipe.batch}", *gin_params]
    gin_config.parse([f"{recipe.model}/{recipe.recipe}.gin"], bindings, family=recipe.model)
    set_precision(recipe.precision)


def synthetic_task(recipe: Recipe) -> ImageClassificationTask:
    """The recipe's task, whose training input is synthetic data of its shape and classes."""
    task = TASKS[recipe.model]()
    spec = task.input

    def build_inputs(split, global_batch_size, input_context):
        batch = input_context.get_per_replica_batch_size(global_batch_size)
        return measure.synthetic_examples(batch, spec.image_size, spec.num_classes, spec.dtype)

    task.build_inputs = build_inputs
    return task


def build_trainer(recipe: Recipe, strategy: tf.distribute.Strategy) -> Trainer:
    """The project's orbit Trainer for the recipe, as models.core.experiment builds it."""
    settings = TrainSettings()
    settings.global_batch_size = recipe.batch
    settings.check(strategy.num_replicas_in_sync)
    task = synthetic_task(recipe)
    with strategy.scope():
        built = task.build_models()
        schedule = {**SCHEDULE_STEPS, "global_batch_size": recipe.batch}
        optimizers = task.build_optimizers(built, schedule)
        step = orbit.utils.create_global_step()
    return Trainer(
        task, strategy, built, optimizers, step, recipe.batch, jit_compile=settings.jit_compile
    )


def measure_ours(
    recipe: Recipe, strategy: tf.distribute.Strategy, warmup_steps: int, steps: int
) -> dict:
    """examples/s, ms/step, params and FLOPs/example of the project's own train step."""
    trainer = build_trainer(recipe, strategy)
    seconds = measure.time_orbit_trainer(trainer, warmup_steps, steps)
    model, task = trainer.models["model"], trainer.task
    size = task.input.image_size
    return {
        "name": f"this project: configs/{recipe.model}/{recipe.recipe}.gin, models.core Trainer",
        **measure.rates(seconds, steps, recipe.batch),
        "params": int(model.count_params()),
        "flops_per_example": measure.training_flops_per_example(model, [size, size, 3]),
        "xla": TrainSettings().jit_compile,
        "optimizer": measure.class_name(trainer.optimizers["model"]),
        "config": model_config(model, task),
    }


def model_config(model: tf_keras.Model, task: ImageClassificationTask) -> dict:
    """What the anchor must match: input, classes, backbone, head, loss and input dtype."""
    backbone = model.backbone.get_config()
    keep = ("model_id", "depth_multiplier", "se_ratio", "init_stochastic_depth_rate")
    keep += ("use_sync_bn", "norm_momentum", "norm_epsilon")
    return {
        "image_size": task.input.image_size,
        "num_classes": task.input.num_classes,
        "input_dtype": task.input.dtype.name,
        "backbone": {k: backbone[k] for k in keep},
        "dropout_rate": model.get_config()["dropout_rate"],
        "label_smoothing": task.label_smoothing,
        "weight_decay": optimization.weight_decay_rate(),
    }
