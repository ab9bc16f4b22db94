"""The RetinaNet anchor: Model Garden's own retinanet_resnetfpn_coco task and trainer, given our
model's exact RetinaNet config, our losses and batch, and fed the same synthetic input."""

from __future__ import annotations

import tensorflow as tf
from official.core import exp_factory
from official.vision.configs import retinanet as _configs  # noqa: F401 - registers
from official.vision.tasks import retinanet as _tasks  # noqa: F401 - registers

from benchmarks.recipes import Recipe
from benchmarks.throughput import measure
from benchmarks.throughput.anchors import EXPERIMENTS
from benchmarks.throughput.anchors.model_garden import gpus_in, time_on_our_input
from models.core import optimization
from models.core.task import Task
from models.core.trainer import Trainer
from models.tasks.detection import DetectionTask

FAMILY = "retinanet"
EXPERIMENT = EXPERIMENTS[FAMILY]


def supports(recipe: Recipe, task: Task) -> bool:
    """Whether the anchor can train what the recipe trains: a RetinaNet detector."""
    return recipe.family == FAMILY and isinstance(task, DetectionTask)


def matched_settings(task: DetectionTask) -> dict:
    """What the anchor must match of ours beyond the model config: losses and input dtype."""
    return {
        "image_size": task.input.image_size,
        "num_classes": task.input.num_classes,
        "input_dtype": task.input.dtype,
        "focal_loss_alpha": task.focal.get_config()["alpha"],
        "focal_loss_gamma": task.focal.get_config()["gamma"],
        "huber_loss_delta": task.huber.get_config()["delta"],
        "box_loss_weight": task.box_loss_weight,
        "l2_weight_decay": optimization.weight_decay_rate(),
    }


def anchor_config(model_config, ours: dict, batch: int, precision: str, num_gpus: int = 0):
    """retinanet_resnetfpn_coco with our model config, losses, batch, dtype and precision; no
    init checkpoint (ours starts from scratch too)."""
    config = exp_factory.get_exp_config(EXPERIMENT)
    losses = {k: ours[k] for k in ("focal_loss_alpha", "focal_loss_gamma", "huber_loss_delta")}
    losses.update(box_loss_weight=ours["box_loss_weight"], l2_weight_decay=ours["l2_weight_decay"])
    data = {"global_batch_size": batch, "dtype": ours["input_dtype"]}
    task = {"model": model_config.as_dict(), "losses": losses, "train_data": data}
    task["init_checkpoint"] = None
    runtime = {"mixed_precision_dtype": precision, "num_gpus": num_gpus}
    config.override({"runtime": runtime, "task": task}, is_strict=True)
    return config


def measure_anchor(
    ours: Trainer, precision: str, strategy: tf.distribute.Strategy, warmup_steps: int, steps: int
) -> dict:
    """examples/s, ms/step and params of Model Garden's RetinaNet train step, on our input."""
    matched = matched_settings(ours.task)
    model_config = ours.models["model"].retinanet_config
    config = anchor_config(model_config, matched, ours.global_batch_size, precision)
    config.runtime.num_gpus = gpus_in(strategy)
    trainer, seconds = time_on_our_input(config, ours, strategy, warmup_steps, steps)
    return {
        "name": f"Model Garden: exp_factory '{EXPERIMENT}', official.core.base_trainer.Trainer",
        **measure.rates(seconds, steps, ours.global_batch_size),
        "params": int(trainer.model.count_params()),
        "flops_per_example": None,
        "xla": bool(config.runtime.enable_xla and config.runtime.num_gpus > 0),
        "optimizer": measure.class_name(trainer.optimizer),
        "matched": {**matched, "model": model_config.as_dict()},
    }
