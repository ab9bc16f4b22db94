"""The orbit trainer on a simulated slice: replica-count invariance and XLA static shapes."""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest
import tensorflow as tf
from contract_tasks import RegressionTask
from family_checks import build_trainer, check_xla_train_step
from zoo_testing import plan

from models.core import gin_config
from models.core.settings import EvalPlan
from models.core.stop import StopFlag, StopRequested
from models.core.strategy import build_strategy
from models.core.trainer import Evaluator, Trainer, build_training_state

# Cross-replica BN makes 4 replicas compute the same batch statistics as 1. ResNet-10 keeps
# the trace short: on CPUs MirroredStrategy does every BN all-reduce through a merge_call.
DETERMINISTIC_INPUT = [
    "classification_input.augmentation = 'none'",
    "resnet.use_sync_bn = True",
    'run.model = "resnet10"',
]


def _losses(trainer, steps):
    return [trainer.train(tf.constant(1))["loss"] for _ in range(steps)]


@pytest.mark.slow
def test_four_replicas_match_one_at_the_same_global_batch(digits_dir):
    gin_config.parse(["resnet/default.gin"], DETERMINISTIC_INPUT)
    one = build_trainer(build_strategy(slice_name="cpu-1"))
    weights = one.models["model"].get_weights()
    four = build_trainer(build_strategy(slice_name="cpu-4"), weights=weights)
    assert four.strategy.num_replicas_in_sync == 4
    # Step 1 checks the forward pass (cross-replica BN); step 2 checks the all-reduced update.
    np.testing.assert_allclose(_losses(four, 2), _losses(one, 2), rtol=1e-4)


@pytest.mark.slow
def test_default_recipe_train_step_compiles_with_xla(digits_dir):
    check_xla_train_step("resnet/default.gin")


class _CountingTask(RegressionTask):
    """Counts how often its train step is traced."""

    traces = 0

    def train_step(self, inputs, models, optimizers, metrics, global_batch_size):
        type(self).traces += 1
        return super().train_step(inputs, models, optimizers, metrics, global_batch_size)


def test_the_training_loop_is_traced_once_and_averages_every_log():
    # A variable created inside the first trace (optimiser slots, log sums) makes tf.function
    # trace the whole loop again: on a big model, tens of seconds before the first step. (A
    # mirrored strategy calls the step once per replica in a trace, so one device here.)
    strategy = build_strategy(slice_name="cpu-1")
    task = _CountingTask()
    state = build_training_state(task, strategy, plan(None, 10, 8))
    trainer = Trainer(task, strategy, state, 8)
    first, second = trainer.train(tf.constant(3)), trainer.train(tf.constant(2))
    assert _CountingTask.traces == 1
    assert int(state.global_step.numpy()) == 5
    assert set(first) == {"loss", "learning_rate/model", "examples_per_second"}
    assert second["loss"] < first["loss"]


class _SignallingTask(RegressionTask):
    """Sends its own process SIGTERM while aggregating the third evaluation batch."""

    def aggregate_logs(self, state, step_outputs, evaluation):
        state = super().aggregate_logs(state, step_outputs, evaluation)
        if len(state) == 3:
            os.kill(os.getpid(), signal.SIGTERM)
        return state


def test_a_signal_ends_an_evaluation_between_batches_with_the_weights_restored():
    """Preemption during a long evaluation (beam search) stops it at the next batch; the
    weight averages it swapped in are swapped back, so what is saved next is the model."""
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}
    gin_config.parse([], ["optimizer.ema_decay = 0.5"])
    strategy, task = build_strategy(slice_name="cpu-1"), _SignallingTask()
    state = build_training_state(task, strategy, plan(None, 10, 8))
    Trainer(task, strategy, state, 8).train(tf.constant(3))
    evaluation = EvalPlan("validation", "validation", "validation", 4, 10, -1)  # 16 batches
    evaluator = Evaluator(task, strategy, state, evaluation, stop=StopFlag.install())
    weights = [w.numpy() for w in state.models["model"].weights]
    try:
        with pytest.raises(StopRequested):
            evaluator.evaluate(tf.constant(-1))
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    assert state.averages  # averaged weights were swapped in for the evaluation
    for before, after in zip(weights, state.models["model"].weights, strict=True):
        np.testing.assert_array_equal(before, after.numpy())
