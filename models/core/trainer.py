"""orbit runners driving any Task: steps_per_loop steps per tf.function, global-batch losses."""

from __future__ import annotations

import time

import numpy as np
import orbit
import tensorflow as tf
import tf_keras

from models.core.ema import WeightAverage
from models.core.task import Models, Optimizers, Task

Averages = dict[str, WeightAverage]


def distributed_dataset(
    strategy, task: Task, split: str, global_batch_size: int, data_service: str | None = None
):
    """One dataset per input pipeline, sharded by tf.distribute.InputContext; with a tf.data
    service, each pipeline runs on the service's workers in "distributed_epoch" mode (the
    service hands out the pipeline's files dynamically: each record once per pass)."""

    def dataset_fn(context: tf.distribute.InputContext) -> tf.data.Dataset:
        dataset = task.build_inputs(split, global_batch_size, context)
        if data_service is None:
            return dataset
        return dataset.apply(
            tf.data.experimental.service.distribute("distributed_epoch", service=data_service)
        )

    return strategy.distribute_datasets_from_function(dataset_fn)


def _current_lr(optimizer: tf_keras.optimizers.Optimizer) -> float:
    lr = optimizer.learning_rate
    if isinstance(lr, tf_keras.optimizers.schedules.LearningRateSchedule):
        lr = lr(optimizer.iterations)
    return float(tf.convert_to_tensor(lr))


class Trainer(orbit.StandardTrainer):
    """Runs task.train_step on every replica; reports loss, lr, metrics and examples/s."""

    def __init__(
        self,
        task: Task,
        strategy: tf.distribute.Strategy,
        models: Models,
        optimizers: Optimizers,
        global_step: tf.Variable,
        global_batch_size: int,
        jit_compile: bool = False,
        use_tf_while_loop: bool = True,
        averages: Averages | None = None,
        data_service: str | None = None,
    ):
        self.task, self.strategy = task, strategy
        self.models, self.optimizers = models, optimizers
        self.averages = averages or {}
        self.global_step, self.global_batch_size = global_step, global_batch_size
        with strategy.scope():
            self.metrics = task.build_metrics(training=True)
            self.loss = tf_keras.metrics.Mean("loss", dtype=tf.float32)
        self._step_fn = tf.function(self._replica_step, jit_compile=True) if jit_compile else None
        self._loop_start = time.perf_counter()
        self._loop_step = 0
        super().__init__(
            distributed_dataset(strategy, task, "train", global_batch_size, data_service),
            options=orbit.StandardTrainerOptions(use_tf_while_loop=use_tf_while_loop),
        )

    def _replica_step(self, inputs):
        logs = self.task.train_step(
            inputs, self.models, self.optimizers, self.metrics, self.global_batch_size
        )
        for average in self.averages.values():
            average.update(self.global_step)
        self.loss.update_state(logs["loss"])
        return logs["loss"]

    def train_loop_begin(self):
        for metric in [self.loss, *self.metrics]:
            metric.reset_states()
        self._loop_start = time.perf_counter()
        self._loop_step = int(self.global_step.numpy())

    def train_step(self, iterator):
        self.strategy.run(self._step_fn or self._replica_step, args=(next(iterator),))
        self.global_step.assign_add(1)

    def train_loop_end(self) -> dict[str, float]:
        steps = int(self.global_step.numpy()) - self._loop_step
        seconds = max(time.perf_counter() - self._loop_start, 1e-9)
        logs = {"loss": float(self.loss.result())}
        logs.update({m.name: float(m.result()) for m in self.metrics})
        first = next(iter(self.optimizers.values()))
        logs["learning_rate"] = _current_lr(first)
        logs["examples_per_second"] = steps * self.global_batch_size / seconds
        return logs


class Evaluator(orbit.StandardEvaluator):
    """Runs task.validation_step on every replica and aggregates outside the graph; with
    weight averages, evaluates the averages (swapped in for the eval, swapped back after)."""

    def __init__(
        self,
        task: Task,
        strategy: tf.distribute.Strategy,
        models: Models,
        global_batch_size: int,
        jit_compile: bool = False,
        averages: Averages | None = None,
    ):
        self.task, self.strategy, self.models = task, strategy, models
        self.averages = averages or {}
        with strategy.scope():
            self.metrics = task.build_metrics(training=False)
        step = self._replica_step
        self._step_fn = tf.function(step, jit_compile=True) if jit_compile else step
        super().__init__(distributed_dataset(strategy, task, "validation", global_batch_size))

    def _replica_step(self, inputs):
        return self.task.validation_step(inputs, self.models, self.metrics)

    def eval_begin(self):
        for metric in self.metrics:
            metric.reset_states()
        for average in self.averages.values():
            average.swap(self.strategy)
        return None

    def eval_step(self, iterator):
        outputs = self.strategy.run(self._step_fn, args=(next(iterator),))
        return tf.nest.map_structure(self.strategy.experimental_local_results, outputs)

    def eval_reduce(self, state=None, step_outputs=None):
        if not step_outputs:
            return state
        local = tf.nest.map_structure(
            lambda parts: np.concatenate([np.asarray(p) for p in parts]),
            step_outputs,
            is_leaf=lambda x: isinstance(x, tuple),
        )
        return self.task.aggregate_logs(state, local)

    def eval_end(self, state=None) -> dict[str, float]:
        for average in self.averages.values():
            average.swap(self.strategy)
        logs = {m.name: float(m.result()) for m in self.metrics}
        logs.update(self.task.reduce_aggregated_logs(state))
        return logs
