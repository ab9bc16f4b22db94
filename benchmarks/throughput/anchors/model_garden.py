"""What every anchor does with Model Garden: build its task's trainer on our input, time it."""

from __future__ import annotations

import tensorflow as tf
from official.core import base_trainer, task_factory, train_utils
from official.modeling import performance

from benchmarks.throughput import measure
from models.core.trainer import SYNTHETIC, Trainer, distributed_dataset


def gpus_in(strategy: tf.distribute.Strategy) -> int:
    """GPUs the strategy runs on (Model Garden turns on XLA only when runtime.num_gpus > 0)."""
    devices = strategy.extended.worker_devices
    return sum(tf.DeviceSpec.from_string(d).device_type == "GPU" for d in devices)


def build_trainer(config, strategy: tf.distribute.Strategy, dataset) -> base_trainer.Trainer:
    """Model Garden's task, model, optimizer and Trainer on `dataset` (a distributed one)."""
    performance.set_mixed_precision_policy(config.runtime.mixed_precision_dtype)
    with strategy.scope():
        task = task_factory.get_task(config.task)
        model = task.build_model()
        optimizer = train_utils.create_optimizer(task, config)
        return base_trainer.Trainer(
            config, task, model, optimizer, train=True, evaluate=False, train_dataset=dataset
        )


def time_on_our_input(config, ours: Trainer, strategy, warmup_steps: int, steps: int):
    """(Model Garden's trainer for `config`, seconds of `steps` steps after `warmup_steps`),
    fed our task's synthetic input."""
    dataset = distributed_dataset(strategy, ours.task, SYNTHETIC, ours.global_batch_size)
    trainer = build_trainer(config, strategy, dataset)
    return trainer, measure.time_orbit_trainer(trainer, warmup_steps, steps)
