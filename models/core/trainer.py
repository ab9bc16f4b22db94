"""orbit runners driving any Task: steps_per_loop steps per tf.function, global-batch losses.

A task's steps run without AutoGraph (plain TensorFlow: tf.cond, tf.while_loop): converting
Model Garden's and Keras's code on every trace cost a detector 7-10 s a process (2026-12-03)."""

from __future__ import annotations

import time
from dataclasses import dataclass

import orbit
import tensorflow as tf
import tf_keras

from models.core import optimization
from models.core.ema import WeightAverage, build_averages
from models.core.errors import UsageError
from models.core.settings import EvalPlan, StepPlan
from models.core.stop import StopFlag, StopRequested
from models.core.task import EvalRun, Models, Optimizers, Task

Averages = dict[str, WeightAverage]
SYNTHETIC = "synthetic"


@dataclass
class TrainingState:
    """What a run trains and checkpoints: models, optimisers, global step, weight averages."""

    models: Models
    optimizers: Optimizers
    global_step: tf.Variable
    averages: Averages


def build_training_state(
    task: Task, strategy: tf.distribute.Strategy, plan: StepPlan
) -> TrainingState:
    """The task's models and optimisers (their slots created now: restores match them, and
    the first traced loop creates no variable, so it is traced once), the global step and
    the weight averages each model's `optimizer.ema_decay` asks for, under the scope."""
    with strategy.scope():
        models = task.build_models()
        optimizers = task.build_optimizers(models, plan)
        global_step = orbit.utils.create_global_step()
        for name, optimizer in optimizers.items():
            _build_slots(optimizer, models[name].trainable_variables)
        decays = {name: optimization.ema_decay(name) for name in optimizers}
        return TrainingState(models, optimizers, global_step, build_averages(models, decays))


def distributed_dataset(
    strategy, task: Task, split: str, global_batch_size: int, data_service: str | None = None
):
    """One dataset per input pipeline, sharded by tf.distribute.InputContext; with a tf.data
    service, each pipeline runs on the service's workers in "distributed_epoch" mode (the
    service hands out the pipeline's files dynamically: each record once per pass). The
    split `synthetic` is the task's synthetic training input."""

    def dataset_fn(context: tf.distribute.InputContext) -> tf.data.Dataset:
        if split == SYNTHETIC:
            return task.synthetic_inputs(global_batch_size, context)
        dataset = task.build_inputs(split, global_batch_size, context)
        if data_service is None:
            return dataset
        return dataset.apply(
            tf.data.experimental.service.distribute("distributed_epoch", service=data_service)
        )

    return strategy.distribute_datasets_from_function(dataset_fn)


def _current_learning_rate(optimizer: tf_keras.optimizers.Optimizer) -> float:
    """The optimiser's learning rate at its current iteration."""
    lr = optimizer.learning_rate
    if isinstance(lr, tf_keras.optimizers.schedules.LearningRateSchedule):
        lr = lr(optimizer.iterations)
    return float(tf.convert_to_tensor(lr))


def _build_slots(optimizer: tf_keras.optimizers.Optimizer, variables: list[tf.Variable]) -> None:
    """Creates the optimiser's slot variables (Keras 2's legacy optimisers, e.g. Model
    Garden's LARS, have no build())."""
    if hasattr(optimizer, "build"):
        optimizer.build(variables)
    else:
        optimizer._create_all_weights(variables)  # noqa: SLF001 - the legacy build


class LoopMeans:
    """Means over a loop of the scalars each step returns, and over replicas.

    Each replica adds its own values to its copy of one vector variable (on-read, as Keras
    metrics): no cross-replica reduction per step; reading it averages the replicas. The
    variable exists before any trace (one created inside the traced loop would make
    tf.function trace the loop twice); the names are learnt while tracing, so a task may
    return any (up to MAX_LOGS)."""

    MAX_LOGS = 64

    def __init__(self, strategy: tf.distribute.Strategy):
        self.names: list[str] = []
        with strategy.scope():
            self._sums = tf.Variable(
                tf.zeros([self.MAX_LOGS]),
                trainable=False,
                name="loop_sums",
                synchronization=tf.VariableSynchronization.ON_READ,
                aggregation=tf.VariableAggregation.MEAN,
            )

    def add(self, logs: dict[str, tf.Tensor]) -> None:
        """Adds one step's scalars of this replica (replica context, inside the loop)."""
        if len(logs) > self.MAX_LOGS:
            raise UsageError(f"train_step returns {len(logs)} logs; at most {self.MAX_LOGS}")
        self.names = list(logs)
        values = tf.stack([tf.cast(value, tf.float32) for value in logs.values()])
        self._sums.assign_add(tf.pad(values, [[0, self.MAX_LOGS - len(logs)]]))

    def reset(self) -> None:
        self._sums.assign(tf.zeros([self.MAX_LOGS]))

    def result(self, steps: int) -> dict[str, float]:
        sums = self._sums.numpy()
        return {name: float(sums[i]) / max(steps, 1) for i, name in enumerate(self.names)}


def _scalar_logs(logs: object) -> dict[str, tf.Tensor]:
    """The task's train logs, checked while tracing: a dict of scalars."""
    if not isinstance(logs, dict) or not logs:
        raise UsageError(f"train_step must return a dict of scalars, got {type(logs).__name__}")
    for name, value in logs.items():
        if tf.convert_to_tensor(value).shape.rank != 0:
            raise UsageError(f"train_step log '{name}' is not a scalar ({value.shape})")
    return logs


def _step_function(replica_step, jit_compile: bool):
    """One replica's step as strategy.run calls it, compiled with XLA when `jit_compile`."""
    return (
        tf.function(replica_step, jit_compile=True, autograph=False)
        if jit_compile
        else replica_step
    )


class Trainer(orbit.StandardTrainer):
    """Runs task.train_step on every replica; reports the mean of every scalar it returns,
    the task's training metrics, each optimiser's learning rate and examples/s. With a stop
    flag, the traced loop ends after the step during which the flag was set, and `train`
    raises StopRequested."""

    def __init__(
        self,
        task: Task,
        strategy: tf.distribute.Strategy,
        state: TrainingState,
        global_batch_size: int,
        jit_compile: bool = False,
        data_service: str | None = None,
        synthetic_input: bool = False,
        stop: StopFlag | None = None,
    ):
        self.task, self.strategy, self.stop = task, strategy, stop
        self.models, self.optimizers = state.models, state.optimizers
        self.averages = state.averages
        self.global_step, self.global_batch_size = state.global_step, global_batch_size
        with strategy.scope():
            self.metrics = task.build_metrics(training=True)
        self.means = LoopMeans(strategy)
        self._step_fn = _step_function(self._replica_step, jit_compile)
        self._loop_start = time.perf_counter()
        self._loop_step = 0
        split = SYNTHETIC if synthetic_input else "train"
        super().__init__(
            distributed_dataset(strategy, task, split, global_batch_size, data_service),
            options=orbit.StandardTrainerOptions(use_tf_while_loop=True),
        )

    def _replica_step(self, inputs) -> None:
        logs = self.task.train_step(
            inputs, self.models, self.optimizers, self.metrics, self.global_batch_size
        )
        for average in self.averages.values():
            average.update(self.global_step)
        self.means.add(_scalar_logs(logs))

    def create_train_loop_fn(self):
        """orbit's traced loop of `num_steps` steps, which also ends once the stop flag is set."""
        if self.stop is None:
            return super().create_train_loop_fn()
        stop = self.stop.variable

        def loop_fn(iterator, num_steps: tf.Tensor) -> None:
            def go_on(i):
                return tf.logical_and(i < num_steps, tf.logical_not(stop.read_value()))

            def step(i):
                with tf.name_scope(""):
                    self.train_step(iterator)
                return [i + 1]

            tf.while_loop(go_on, step, [tf.constant(0)])

        return tf.function(loop_fn, autograph=False)

    def train(self, num_steps: tf.Tensor) -> dict[str, float]:
        output = super().train(num_steps)
        if self.stop is not None:
            self.stop.check()
        return output

    def train_loop_begin(self):
        for metric in self.metrics:
            metric.reset_states()
        self.means.reset()
        self._loop_start = time.perf_counter()
        self._loop_step = int(self.global_step.numpy())

    @tf.autograph.experimental.do_not_convert  # and so is everything it calls
    def train_step(self, iterator):
        self.strategy.run(self._step_fn, args=(next(iterator),))
        self.global_step.assign_add(1)

    def train_loop_end(self) -> dict[str, float]:
        steps = int(self.global_step.numpy()) - self._loop_step
        seconds = max(time.perf_counter() - self._loop_start, 1e-9)
        logs = self.means.result(steps)
        logs.update({m.name: float(m.result()) for m in self.metrics})
        for name, optimizer in self.optimizers.items():
            logs[f"learning_rate/{name}"] = _current_learning_rate(optimizer)
        logs["examples_per_second"] = steps * self.global_batch_size / seconds
        return logs


def _with_batch_axis(value: tf.Tensor) -> tf.Tensor:
    """A scalar as a 1-vector, so that gathering over replicas gives one value per replica."""
    value = tf.convert_to_tensor(value)
    return tf.reshape(value, [1]) if value.shape.rank == 0 else value


class Evaluator(orbit.StandardEvaluator):
    """Runs one named evaluation: task.validation_step on every replica, its outputs gathered
    over all replicas (and workers) and aggregated outside the graph; with weight averages,
    evaluates the averages (swapped in for the eval, swapped back after). With a stop flag,
    the flag is checked after every batch: StopRequested ends the evaluation, weights restored."""

    def __init__(
        self,
        task: Task,
        strategy: tf.distribute.Strategy,
        state: TrainingState,
        evaluation: EvalPlan,
        jit_compile: bool = False,
        output_dir: str | None = None,
        stop: StopFlag | None = None,
        mode: str = "",
    ):
        self.task, self.strategy, self.models = task, strategy, state.models
        self.stop, self.mode = stop, mode
        self.written: list[str] = []  # the files the last evaluation wrote
        self.batches_done, self._started = 0, time.perf_counter()
        self.evaluation, self.global_step = evaluation, state.global_step
        self.output_dir = output_dir and f"{output_dir}/evaluations/{evaluation.name}"
        self.averages = state.averages
        with strategy.scope():
            self.metrics = task.build_metrics(training=False, evaluation=evaluation)
        self._step_fn = _step_function(self._replica_step, jit_compile)
        dataset = distributed_dataset(
            strategy, task, evaluation.split, evaluation.global_batch_size
        )
        super().__init__(dataset)

    def metric_names(self) -> list[str]:
        """The names this evaluation's Keras metrics are reported under."""
        return [self.evaluation.metric_name(m.name) for m in self.metrics]

    def _replica_step(self, inputs):
        outputs = self.task.validation_step(inputs, self.models, self.metrics, self.evaluation)
        return tf.nest.map_structure(_with_batch_axis, outputs)

    def evaluate(self, num_steps: tf.Tensor) -> dict[str, float]:
        try:
            return super().evaluate(num_steps)
        except StopRequested:
            self._swap_averages()  # eval_end, which swaps them back, never ran
            raise

    def eval_begin(self):
        for metric in self.metrics:
            metric.reset_states()
        self._swap_averages()
        self.batches_done, self._started = 0, time.perf_counter()
        return None

    def progress(self) -> str:
        """What a progress line says while this evaluation runs."""
        seconds = time.perf_counter() - self._started
        name, split = self.evaluation.name, self.evaluation.split
        return f"evaluating {name} ({split}): {self.batches_done} batches in {seconds:.0f} s"

    def _swap_averages(self) -> None:
        for average in self.averages.values():
            average.swap(self.strategy)

    @tf.autograph.experimental.do_not_convert
    def eval_step(self, iterator):
        outputs = self.strategy.run(self._step_fn, args=(next(iterator),))
        return tf.nest.map_structure(lambda value: self.strategy.gather(value, axis=0), outputs)

    def eval_reduce(self, state=None, step_outputs=None):
        self.batches_done += 1
        if self.stop is not None:
            self.stop.check()
        if step_outputs is None or not tf.nest.flatten(step_outputs):
            return state
        values = tf.nest.map_structure(lambda value: value.numpy(), step_outputs)
        return self.task.aggregate_logs(state, values, self.evaluation)

    def eval_end(self, state=None) -> dict[str, float]:
        self._swap_averages()
        logs = {m.name: float(m.result()) for m in self.metrics}
        run = EvalRun(int(self.global_step.numpy()), self.output_dir, self.mode)
        self.task.eval_run = run
        logs.update(self.task.reduce_aggregated_logs(state, self.evaluation))
        self.written = run.written
        return {self.evaluation.metric_name(name): value for name, value in logs.items()}
