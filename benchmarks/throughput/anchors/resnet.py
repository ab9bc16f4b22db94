"""The ResNet anchor: Model Garden's own resnet_imagenet task and trainer, set to match our
recipe and fed the same synthetic input."""

from __future__ import annotations

import tensorflow as tf
import tf_keras
from official.core import exp_factory
from official.vision.configs import image_classification as _configs  # noqa: F401 - registers
from official.vision.tasks import image_classification as _tasks  # noqa: F401 - registers

from benchmarks.recipes import Recipe
from benchmarks.throughput import measure
from benchmarks.throughput.anchors import EXPERIMENTS
from benchmarks.throughput.anchors.model_garden import gpus_in, time_on_our_input
from models.core import optimization
from models.core.task import Task
from models.core.trainer import Trainer
from models.tasks.image_classification import ImageClassificationTask

FAMILY = "resnet"
EXPERIMENT = EXPERIMENTS[FAMILY]


def supports(recipe: Recipe, task: Task) -> bool:
    """Whether the anchor can train what the recipe trains: a ResNet image classifier."""
    return recipe.family == FAMILY and isinstance(task, ImageClassificationTask)


def matched_settings(model: tf_keras.Model, task: ImageClassificationTask) -> dict:
    """What the anchor must match of ours: input, classes, backbone, head, loss, input dtype."""
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


def anchor_config(ours: dict, batch: int, precision: str, num_gpus: int = 0):
    """resnet_imagenet with our batch, image size, classes, backbone, loss, dtype and precision."""
    config = exp_factory.get_exp_config(EXPERIMENT)
    size, backbone = ours["image_size"], ours["backbone"]
    resnet = {
        "model_id": backbone["model_id"],
        "depth_multiplier": backbone["depth_multiplier"],
        "se_ratio": backbone["se_ratio"] or 0.0,
        "stochastic_depth_drop_rate": backbone["init_stochastic_depth_rate"],
    }
    norm = {k: backbone[k] for k in ("use_sync_bn", "norm_momentum", "norm_epsilon")}
    model = {
        "num_classes": ours["num_classes"],
        "input_size": [size, size, 3],
        "dropout_rate": ours["dropout_rate"],
        "backbone": {"type": "resnet", "resnet": resnet},
        "norm_activation": norm,
    }
    losses = {"label_smoothing": ours["label_smoothing"], "l2_weight_decay": ours["weight_decay"]}
    data = {"global_batch_size": batch, "dtype": ours["input_dtype"]}
    runtime = {"mixed_precision_dtype": precision, "num_gpus": num_gpus}
    task = {"model": model, "losses": losses, "train_data": data}
    config.override({"runtime": runtime, "task": task}, is_strict=True)
    return config


def measure_anchor(
    ours: Trainer, precision: str, strategy: tf.distribute.Strategy, warmup_steps: int, steps: int
) -> dict:
    """examples/s, ms/step, params and FLOPs/example of Model Garden's train step, matched to
    our trainer and fed our task's synthetic input."""
    batch = ours.global_batch_size
    matched = matched_settings(ours.models["model"], ours.task)
    config = anchor_config(matched, batch, precision, gpus_in(strategy))
    trainer, seconds = time_on_our_input(config, ours, strategy, warmup_steps, steps)
    size, runtime = matched["image_size"], config.runtime
    return {
        "name": f"Model Garden: exp_factory '{EXPERIMENT}', official.core.base_trainer.Trainer",
        **measure.rates(seconds, steps, batch),
        "params": int(trainer.model.count_params()),
        "flops_per_example": measure.training_flops_per_example(trainer.model, [size, size, 3]),
        "xla": bool(runtime.enable_xla and runtime.num_gpus > 0),
        "optimizer": measure.class_name(trainer.optimizer),
        "matched": matched,
    }
