"""Inception: the logits head, the auxiliary head, recipes and usage errors. (Parameter counts:
tests/test_models.py; default recipe end to end, XLA, simulated slice:
tests/test_family_defaults.py.)"""

from __future__ import annotations

import gin
import pytest
from zoo_testing import plan

import models
from models.core import gin_config, optimization, registry
from models.core.errors import UsageError
from models.core.recipe import RunSpec
from models.tasks.image_classification import ImageClassificationTask


@pytest.mark.slow
def test_inception_v3_head_is_the_applications_top_with_or_without_dropout():
    plain = models.create_model("inception_v3", num_classes=1000, dropout_rate=0.0)
    dropout = models.create_model("inception_v3", num_classes=1000, dropout_rate=0.2)
    for net in (plain, dropout):
        assert net.input_shape == (None, 299, 299, 3)
        assert net.output_shape == (None, 1000)
        assert net.layers[-1].get_config()["activation"] == "linear"  # logits
    assert plain.count_params() == dropout.count_params()


def test_auxiliary_head_leaves_the_inference_network_unchanged():
    net = models.create_model("inception_v3", num_classes=1000, use_aux_head=True)
    keras_table = registry.model_entry("inception_v3").published[0]
    assert keras_table.counting == "keras_total"
    assert net.network.count_params() == keras_table.value  # what eval and export run
    assert net.aux_network.output_shape == [(None, 1000), (None, 1000)]


@pytest.mark.parametrize("version", ["v3", "v4"])
def test_imagenet_recipes_train_the_auxiliary_head_on_distorted_colours(version):
    # The references: AuxLogits loss weight 0.4; inception_preprocessing's distort_color_fast
    # (flag use_fast_color_distort defaults to True).
    gin_config.parse([f"inception/inception_{version}_imagenet.gin"], [])
    assert gin.query_parameter("inception.use_aux_head") is True
    task = ImageClassificationTask(model=RunSpec().model)
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
    step_plan = plan(steps_per_epoch, 200 * steps_per_epoch, 1024)
    schedule = optimization.learning_rate(step_plan)
    peak = 0.165 * 1024 / 256
    for epoch in (10, 31, 100):  # after the 7 warmup epochs: 0.94 per 3 whole epochs
        lr = float(schedule(epoch * steps_per_epoch + 1))
        assert lr == pytest.approx(peak * 0.94 ** (epoch // 3), rel=1e-5)
    optimizer = optimization.build_optimizer(step_plan)
    config = optimizer.get_config()
    assert config["name"] == "RMSprop"
    assert (config["rho"], config["momentum"], config["epsilon"]) == (0.9, 0.9, 1.0)
    task = ImageClassificationTask(model=RunSpec().model)
    assert task.label_smoothing == 0.1 and task.input.image_size == 299
    assert task.input.mean_rgb == task.input.stddev_rgb == (127.5, 127.5, 127.5)
