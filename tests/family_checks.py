"""Checks every family's default recipe must pass (issue: same spine)."""

from __future__ import annotations

import gin
import numpy as np
import tensorflow as tf
from zoo_testing import plan

from models.core import gin_config, registry
from models.core.recipe import RunSpec
from models.core.strategy import build_strategy
from models.core.trainer import Trainer, build_training_state


def build_trainer(
    strategy, jit_compile: bool = False, weights=None, batch_size: int = 64
) -> Trainer:
    """The parsed recipe's task, model and optimiser under `strategy`."""
    registry.load_all()
    spec = RunSpec().check()
    task = spec.task(model=spec.model, seed=0)
    state = build_training_state(task, strategy, plan(20, 100, batch_size))
    if weights is not None:
        state.models["model"].set_weights(weights)
    return Trainer(task, strategy, state, batch_size, jit_compile=jit_compile)


def check_xla_train_step(recipe: str, params: tuple[str, ...] = ()) -> None:
    """The recipe's train step, with gin `params`, compiles with jit_compile=True (static
    shapes) and runs, at batch 8: XLA's compile time is the check; a bigger batch only runs the
    step longer."""
    gin.clear_config()
    try:
        gin_config.parse([recipe], [*params, "train.jit_compile = True"])
        trainer = build_trainer(build_strategy(slice_name="cpu-1"), jit_compile=True, batch_size=8)
        logs = trainer.train(tf.constant(1))
    finally:
        gin.clear_config()
    losses = {name: float(value) for name, value in logs.items() if name.endswith("loss")}
    assert losses and all(np.isfinite(list(losses.values()))), logs
    assert int(trainer.global_step.numpy()) == 1
