"""The orbit trainer on a simulated slice: replica-count invariance and XLA static shapes."""

from __future__ import annotations

import gin
import numpy as np
import pytest
import tensorflow as tf
from family_checks import build_trainer, check_xla_train_step

from models.core import gin_config
from models.core.strategy import build_strategy

# Cross-replica BN makes 4 replicas compute the same batch statistics as 1. ResNet-10 keeps
# the trace short: on CPUs MirroredStrategy does every BN all-reduce through a merge_call.
DETERMINISTIC_INPUT = [
    "classification_input.augmentation = 'none'",
    "resnet.use_sync_bn = True",
    'run.model = "resnet10"',
]


@pytest.fixture(autouse=True)
def _clean_gin():
    gin.clear_config()
    yield
    gin.clear_config()


def _losses(trainer, steps):
    return [trainer.train(tf.constant(1))["loss"] for _ in range(steps)]


def test_four_replicas_match_one_at_the_same_global_batch(digits_dir):
    gin_config.parse(["resnet/default.gin"], DETERMINISTIC_INPUT)
    one = build_trainer(build_strategy(slice_name="cpu-1"))
    weights = one.models["model"].get_weights()
    four = build_trainer(build_strategy(slice_name="cpu-4"), weights=weights)
    assert four.strategy.num_replicas_in_sync == 4
    # Step 1 checks the forward pass (cross-replica BN); step 2 checks the all-reduced update.
    np.testing.assert_allclose(_losses(four, 2), _losses(one, 2), rtol=1e-4)


def test_default_recipe_train_step_compiles_with_xla(digits_dir):
    check_xla_train_step("resnet/default.gin")
