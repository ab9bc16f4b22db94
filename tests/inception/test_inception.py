"""Inception: published parameter count, recipes, CLI time-to-accuracy, XLA, simulated slice."""

from __future__ import annotations

import gin
import numpy as np
import pytest
from tf_keras.layers import BatchNormalization

import models
from models.core import gin_config, optimization
from models.core.errors import UsageError
from models.core.tasks.image_classification import ImageClassificationTask
from models.inception import model  # noqa: F401 - registers the inception configurables

# Keras Applications table: InceptionV3, 23,851,784 parameters (1000 classes, 299x299, no
# auxiliary classifier). Szegedy et al. 2015 (arXiv 1512.00567) quote ~25M for Inception-v3
# without a counting convention; the inference network built here is asserted against the
# Keras number, and with the auxiliary head against torchvision's count below.
PUBLISHED_PARAMS_NO_AUX = 23_851_784


@pytest.fixture(autouse=True)
def _clean_gin():
    gin.clear_config()
    yield
    gin.clear_config()


@pytest.mark.parametrize("dropout_rate", [0.0, 0.2])
def test_imagenet_inception_v3_matches_published_parameter_count(dropout_rate):
    net = models.create_model("inception_v3", num_classes=1000, dropout_rate=dropout_rate)
    assert net.input_shape == (None, 299, 299, 3)
    assert net.output_shape == (None, 1000)
    assert abs(net.count_params() - PUBLISHED_PARAMS_NO_AUX) <= 0.01 * PUBLISHED_PARAMS_NO_AUX
    assert net.layers[-1].get_config()["activation"] == "linear"  # logits


# torchvision's Inception_V3_Weights.IMAGENET1K_V1 card: 27,161,264 parameters for
# inception_v3, which includes TF-slim's AuxLogits head (kernels, dense, BN gamma and beta).
TORCHVISION_PARAMS_WITH_AUX = 27_161_264


def test_auxiliary_head_is_tf_slims_and_leaves_the_inference_network_unchanged():
    net = models.create_model("inception_v3", num_classes=1000, use_aux_head=True)
    assert net.network.count_params() == PUBLISHED_PARAMS_NO_AUX  # what eval and export run
    assert net.aux_network.output_shape == [(None, 1000), (None, 1000)]
    trainable = sum(int(np.prod(w.shape)) for w in net.aux_network.trainable_weights)
    bn = [layer for layer in net.aux_network.layers if isinstance(layer, BatchNormalization)]
    gammas = sum(layer.beta.shape[0] for layer in bn)  # torchvision's BN has gamma, slim's not
    assert trainable + gammas == TORCHVISION_PARAMS_WITH_AUX


@pytest.mark.parametrize("version", ["v3", "v4"])
def test_imagenet_recipes_train_the_auxiliary_head_on_distorted_colours(version):
    # The references: AuxLogits loss weight 0.4; inception_preprocessing's distort_color_fast
    # (flag use_fast_color_distort defaults to True).
    gin_config.parse([f"inception/inception_{version}_imagenet.gin"], [])
    assert gin.query_parameter("inception.use_aux_head") is True
    task = ImageClassificationTask()
    assert task.aux_loss_weight == 0.4 and task.input.color_distortion == "brightness_chroma"


def test_builder_rejects_unknown_version_and_too_small_images():
    with pytest.raises(UsageError, match="v3_small"):
        models.create_model("inception_v3", version="v2")
    with pytest.raises(UsageError, match="75"):
        models.create_model("inception_v3", num_classes=10, image_size=32)
    with pytest.raises(UsageError, match="use_aux_head applies to v3 and v4"):
        models.create_model("inception_v3_small", num_classes=10, use_aux_head=True)


def test_imagenet_recipe_is_the_tpu_reference_schedule():
    gin_config.parse(["inception/inception_v3_imagenet.gin"], [])
    steps_per_epoch = 1251  # 1281167 / 1024
    schedule = optimization.learning_rate(
        steps_per_epoch=steps_per_epoch, total_steps=200 * steps_per_epoch, global_batch_size=1024
    )
    peak = 0.165 * 1024 / 256
    for epoch in (10, 31, 100):  # after the 7 warmup epochs: 0.94 per 3 whole epochs
        lr = float(schedule(epoch * steps_per_epoch + 1))
        assert lr == pytest.approx(peak * 0.94 ** (epoch // 3), rel=1e-5)
    optimizer = optimization.build_optimizer(schedule)
    config = optimizer.get_config()
    assert config["name"] == "RMSprop"
    assert (config["rho"], config["momentum"], config["epsilon"]) == (0.9, 0.9, 1.0)
    task = ImageClassificationTask()
    assert task.label_smoothing == 0.1 and task.input.image_size == 299
    assert task.input.mean_rgb == task.input.stddev_rgb == (127.5, 127.5, 127.5)
