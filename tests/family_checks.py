"""Checks every family's default recipe must pass (issue: same spine)."""

from __future__ import annotations

import gin
import numpy as np
import tensorflow as tf
from zoo_testing import latest_record, plan, run_model

from models import registry
from models.core import gin_config
from models.core.recipe import RunSpec
from models.core.strategy import build_strategy
from models.core.trainer import Trainer, build_training_state

# A hang guard, not a speed check. On a slow day (2026-12-02) the detectors' default recipes
# took 26 minutes beside another training (RetinaNet, epoch 12) and 39 minutes mostly alone
# (Mask R-CNN, epoch 12): beside the other pytest worker, Mask R-CNN may need over an hour.
TARGET_TIMEOUT_S = 4800


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


def check_reaches_target(family: str, model_dir, env: dict, *args: str) -> str:
    """`python -m models.<family> --model_dir=DIR ARGS` trains the default recipe (or the one
    ARGS name) to its target (97% top-1 for classifiers, a box AP for detectors, and a mask AP
    for Mask R-CNN); returns the run's output."""
    result = run_model(family, model_dir, *args, env=env, timeout=TARGET_TIMEOUT_S)
    assert result.returncode == 0, result.stderr[-3000:]
    record = latest_record(model_dir)
    metric, target = record["target_metric"], record["target_value"]
    curve = [round(point[metric], 4) for point in record["eval_curve"]]
    assert record["status"] == "success", f"eval {metric} per evaluation: {curve}"
    reached = record["final_metrics"][metric]
    assert reached <= target if record["target_direction"] == "lower" else reached >= target
    for also, value in (record["also_reach"] or {}).items():  # Mask R-CNN's mask AP
        assert record["final_metrics"][also] >= value, f"{also} below {value}"
    assert "time to accuracy" in result.stdout
    return result.stdout + result.stderr


def check_runs_on_cpu2(family: str, model_dir, env: dict) -> None:
    """Three steps of the default recipe on a simulated 2-replica slice (its whole curve is
    the README's `--slice=cpu-2` run: an epoch of Mask R-CNN takes six minutes here)."""
    args = (
        "--slice=cpu-2",
        "--mode=train",
        "--gin_param=train.epochs = None",
        "--gin_param=train.examples = None",
        "--gin_param=train.steps = 3",
    )
    result = run_model(family, model_dir, *args, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert latest_record(model_dir)["replicas"] == 2
