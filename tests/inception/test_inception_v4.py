"""Inception-v4: published parameter count, 299x299 build, TPU-reference recipe, small images.

No training run here (the network is too big for CI); the family's default recipe
(inception_v3_small) carries the shared training checks in test_inception.py.
"""

from __future__ import annotations

import gin
import numpy as np
import pytest
import tf_keras

import models
from models.core import gin_config, optimization
from models.core.errors import UsageError
from models.core.tasks.image_classification import ImageClassificationTask
from models.inception import model  # noqa: F401 - registers the inception configurables

# timm's ImageNet results table (huggingface/pytorch-image-models, results/results-imagenet.csv,
# row inception_v4.tf_in1k: param_count 42.68, in millions; its model card
# huggingface.co/timm/inception_v4.tf_in1k rounds to 42.7M). That model is TF-slim's
# Inception-v4 (ported via Cadene's pretrained-models.pytorch) at 1000 classes, no auxiliary
# head, counting conv kernels, BN gamma and beta, and the dense layer (not BN moving
# statistics). The paper (arXiv 1602.07261) prints no parameter count.
PUBLISHED_PARAMS = 42_680_000
NUM_TRAIN = 1281167


@pytest.fixture(autouse=True)
def _clean_gin():
    gin.clear_config()
    yield
    gin.clear_config()


@pytest.fixture(scope="module")
def net() -> tf_keras.Model:
    return models.create_model("inception_v4", num_classes=1000)


def _size(weights) -> int:
    return sum(int(np.prod(w.shape)) for w in weights)


def test_matches_published_parameter_count(net):
    bn = [layer for layer in net.layers if isinstance(layer, tf_keras.layers.BatchNormalization)]
    assert all(not layer.scale for layer in bn)  # TF-slim's unit: BN beta only, no gamma
    bn_channels = sum(layer.beta.shape[0] for layer in bn)
    # count_params(): conv kernels + dense + 3 per BN channel (beta, moving mean and variance).
    assert abs(net.count_params() - PUBLISHED_PARAMS) <= 0.01 * PUBLISHED_PARAMS
    # timm's convention (2 per BN channel, gamma + beta) is the published figure to 4 digits.
    timm_count = _size(net.trainable_weights) + bn_channels
    assert timm_count == net.count_params() - bn_channels == 42_679_816
    assert round(timm_count / 1e4) == PUBLISHED_PARAMS // 10_000


def test_builds_at_299_with_1000_logits_and_the_papers_grids(net):
    assert net.input_shape == (None, 299, 299, 3)
    assert net.output_shape == (None, 1000)
    assert net.layers[-1].get_config()["activation"] == "linear"  # logits
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
    assert gin.query_parameter("inception.version") == "v4"
    assert gin.query_parameter("train.global_batch_size") == 256
    steps_per_epoch = NUM_TRAIN // batch
    schedule = optimization.learning_rate(
        steps_per_epoch=steps_per_epoch, total_steps=200 * steps_per_epoch, global_batch_size=batch
    )
    for epoch in (3.5, 4.5, 10.5, 51.5, 199.5):  # after warmup: equal to the reference
        step = int(epoch * steps_per_epoch)
        assert float(schedule(step)) == pytest.approx(_reference_lr(step, batch), rel=1e-5)
    # The linear warmup ramps from 0 to the reference's value at its epoch 3.
    assert float(schedule(0)) == 0.0
    reference_epoch_3 = _reference_lr(-(-3 * NUM_TRAIN // batch), batch)
    assert float(schedule(3 * steps_per_epoch)) == pytest.approx(reference_epoch_3, rel=1e-5)
    config = optimization.build_optimizer(schedule).get_config()
    assert config["name"] == "RMSprop"
    assert (config["rho"], config["momentum"], config["epsilon"]) == (0.9, 0.9, 1.0)
    assert gin.query_parameter("optimizer.ema_decay") == 0.995
    assert gin.query_parameter("weight_decay.rate") == 4e-5
    task = ImageClassificationTask()
    assert task.label_smoothing == 0.1 and task.input.image_size == 299
    assert task.input.mean_rgb == task.input.stddev_rgb == (127.5, 127.5, 127.5)


def test_too_small_images_and_width_multiplier_are_usage_errors():
    with pytest.raises(UsageError, match="at least 75x75"):
        models.create_model("inception_v4", image_size=74)
    with pytest.raises(UsageError, match="v3_small"):
        models.create_model("inception_v4", width_multiplier=0.5)
