"""The anchor: Model Garden's own resnet_imagenet task and trainer, set to match our recipe."""

from __future__ import annotations

import tensorflow as tf
from official.core import base_trainer, exp_factory, task_factory, train_utils
from official.modeling import performance
from official.vision.configs import image_classification as _configs  # noqa: F401 - registers
from official.vision.tasks import image_classification as _tasks  # noqa: F401 - registers

from benchmarks import throughput_measure as measure

EXPERIMENT = "resnet_imagenet"


def _gpus_in(strategy: tf.distribute.Strategy) -> int:
    """GPUs the strategy runs on (Model Garden turns on XLA only when runtime.num_gpus > 0)."""
    devices = strategy.extended.worker_devices
    return sum(tf.DeviceSpec.from_string(d).device_type == "GPU" for d in devices)


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


def build_trainer(config, strategy: tf.distribute.Strategy) -> base_trainer.Trainer:
    """Model Garden's task, model, optimizer and Trainer, fed synthetic data of our shape."""
    performance.set_mixed_precision_policy(config.runtime.mixed_precision_dtype)
    model_config, data = config.task.model, config.task.train_data
    with strategy.scope():
        task = task_factory.get_task(config.task)
        model = task.build_model()
        optimizer = train_utils.create_optimizer(task, config)
        dataset = measure.synthetic_distributed(
            strategy,
            data.global_batch_size,
            model_config.input_size[0],
            model_config.num_classes,
            tf.as_dtype(data.dtype),
        )
        return base_trainer.Trainer(
            config, task, model, optimizer, train=True, evaluate=False, train_dataset=dataset
        )


def measure_anchor(
    ours: dict,
    batch: int,
    precision: str,
    strategy: tf.distribute.Strategy,
    warmup_steps: int,
    steps: int,
) -> dict:
    """examples/s, ms/step, params and FLOPs/example of Model Garden's train step."""
    config = anchor_config(ours, batch, precision, _gpus_in(strategy))
    trainer = build_trainer(config, strategy)
    seconds = measure.time_orbit_trainer(trainer, warmup_steps, steps)
    size = ours["image_size"]
    runtime = config.runtime
    return {
        "name": f"Model Garden: exp_factory '{EXPERIMENT}', official.core.base_trainer.Trainer",
        **measure.rates(seconds, steps, batch),
        "params": int(trainer.model.count_params()),
        "flops_per_example": measure.training_flops_per_example(trainer.model, [size, size, 3]),
        "xla": bool(runtime.enable_xla and runtime.num_gpus > 0),
        "optimizer": measure.class_name(trainer.optimizer),
    }
