"""Inception-v4: 299x299 build, TPU-reference recipe, small images (parameter count:
tests/test_models.py).

No training to a target here (the network is too big for CI): tests/test_models.py runs one
training step at 75x75; the family's default recipe (inception_v3_small) carries the shared
training checks.
"""

from __future__ import annotations

import gin
import numpy as np
import pytest
import tf_keras
from zoo_testing import plan

import models
from models.core import gin_config, optimization
from models.core.errors import UsageError
from models.core.recipe import RunSpec
from models.tasks.image_classification import ImageClassificationTask

NUM_TRAIN = 1281167


@pytest.fixture(scope="module")
def net() -> tf_keras.Model:
    return models.create_model("inception_v4", num_classes=1000)


def test_builds_at_299_with_1000_logits_and_the_papers_grids(net):
    assert net.input_shape == (None, 299, 299, 3)
    assert net.output_shape == (None, 1000)
    assert net.layers[-1].get_config()["activation"] == "linear"  # logits
    bn = [layer for layer in net.layers if isinstance(layer, tf_keras.layers.BatchNormalization)]
    assert all(not layer.scale for layer in bn)  # TF-slim's unit: BN beta only, no gamma
    grids = {"mixed_5a": (35, 384), "mixed_6a": (17, 1024), "mixed_7d": (8, 1536)}
    for name, (side, channels) in grids.items():
        assert net.get_layer(name).output.shape[1:] == (side, side, channels)
    logits = net(np.zeros((1, 299, 299, 3), np.float32), training=False)
    assert logits.shape == (1, 1000) and np.isfinite(logits).all()


def _reference_lr(step: int, batch: int) -> float:
    """tensorflow/tpu inception_v4.py (inception_model_fn) with its flag defaults."""
    per_epoch = NUM_TRAIN / batch
    initial = 0.15 * batch / 256 / 0.94 ** ((2 + 1) / 2)
    epoch = int(step / per_epoch)
    if epoch < 1:
        return 0.001
    if epoch < 3:
        return epoch * initial / 3
    return max(initial * 0.94 ** (step // int(2 * per_epoch)), 1e-4 * initial)


@pytest.mark.parametrize("batch", [256, 1024])
def test_imagenet_recipe_is_the_tpu_reference_schedule(batch):
    gin_config.parse(["inception/inception_v4_imagenet.gin"], [])
    assert RunSpec().model == "inception_v4"
    assert gin.query_parameter("train.global_batch_size") == 256
    steps_per_epoch = NUM_TRAIN // batch
    step_plan = plan(steps_per_epoch, 200 * steps_per_epoch, batch)
    schedule = optimization.learning_rate(step_plan)
    for epoch in (3.5, 4.5, 10.5, 51.5, 199.5):  # after warmup: equal to the reference
        step = int(epoch * steps_per_epoch)
        assert float(schedule(step)) == pytest.approx(_reference_lr(step, batch), rel=1e-5)
    # The linear warmup ramps from 0 to the reference's value at its epoch 3.
    assert float(schedule(0)) == 0.0
    reference_epoch_3 = _reference_lr(-(-3 * NUM_TRAIN // batch), batch)
    assert float(schedule(3 * steps_per_epoch)) == pytest.approx(reference_epoch_3, rel=1e-5)
    config = optimization.build_optimizer(step_plan).get_config()
    assert config["name"] == "RMSprop"
    assert (config["rho"], config["momentum"], config["epsilon"]) == (0.9, 0.9, 1.0)
    assert gin.query_parameter("optimizer.ema_decay") == 0.995
    assert gin.query_parameter("weight_decay.rate") == 4e-5
    task = ImageClassificationTask(model=RunSpec().model)
    assert task.label_smoothing == 0.1 and task.input.image_size == 299
    assert task.input.mean_rgb == task.input.stddev_rgb == (127.5, 127.5, 127.5)


def test_too_small_images_and_width_multiplier_are_usage_errors():
    with pytest.raises(UsageError, match="at least 75x75"):
        models.create_model("inception_v4", image_size=74)
    with pytest.raises(UsageError, match="v3_small"):
        models.create_model("inception_v4", width_multiplier=0.5)
