"""The Object-Detection-API family: every feature extractor composes with every feature
pyramid, softmax-trained heads are scored by their softmax, SSD's hard-negative loss trains
through the shared task, and a loss that trains other scores than the model gives is one line."""

from __future__ import annotations

import gin
import numpy as np
import pytest
import tensorflow as tf
from official.vision.losses.loss_utils import multi_level_flatten
from zoo_testing import two_scene_jpegs

from models.core import gin_config, registry
from models.core.errors import UsageError
from models.core.recipe import RunSpec
from models.object_detection.model import FEATURE_EXTRACTORS, FEATURE_PYRAMIDS, ssd
from models.tasks.hard_negatives import hard_negative_softmax_loss
from models.tasks.single_stage import SoftmaxDetectionGenerator, softmax_as_logits


def default_task(*bindings: str):
    """The default recipe's task, with gin `bindings`."""
    gin_config.parse(["object_detection/default.gin"], list(bindings), family="object_detection")
    registry.load_all()
    spec = RunSpec().check()
    return spec.task(model=spec.model, seed=0)


@pytest.mark.slow
@pytest.mark.parametrize("pyramid", sorted(FEATURE_PYRAMIDS))
@pytest.mark.parametrize("extractor", sorted(FEATURE_EXTRACTORS))
def test_every_feature_extractor_composes_with_every_pyramid(extractor, pyramid):
    gin.parse_config(["anchors.max_level = 5", "anchors.num_scales = 1"])
    model = ssd(
        num_classes=4,
        image_size=128,
        feature_extractor=extractor,
        width_multiplier=0.25,
        feature_pyramid=pyramid,
        pyramid_filters=16,
        box_predictor_convs=1,
        box_predictor_filters=16,
    )
    with tf.GradientTape() as tape:
        outputs = model(tf.zeros([1, 128, 128, 3]), training=True)
        total = sum(tf.reduce_sum(v) for part in outputs.values() for v in part.values())
    assert sorted(outputs["cls_outputs"]) == ["3", "4", "5"]
    assert outputs["cls_outputs"]["3"].shape == (1, 16, 16, 3 * 4)  # 3 aspect ratios x classes
    assert outputs["box_outputs"]["5"].shape == (1, 4, 4, 3 * 4)
    # every weight trains: MobileNet's final 1x1 convolution, which no pyramid reads, is gone
    grads = tape.gradient(total, model.trainable_variables)
    assert [
        v.name for v, g in zip(model.trainable_variables, grads, strict=True) if g is None
    ] == []


def test_softmax_scores_pass_through_the_generators_sigmoid() -> None:
    logits = tf.random.stateless_normal([2, 3, 3, 2 * 5], seed=[1, 2], stddev=3.0)
    odds = softmax_as_logits(logits, anchors_per_location=2)
    expected = tf.nn.softmax(tf.reshape(logits, [2, 3, 3, 2, 5]))
    np.testing.assert_allclose(tf.sigmoid(odds), tf.reshape(expected, [2, 3, 3, 10]), atol=1e-6)


def test_a_softmax_model_detects_with_its_softmax_scores(digit_scenes_dir: str) -> None:
    task = default_task()
    model = task.build_models()["model"]
    assert model.class_activation == "softmax"
    assert isinstance(model.detection_generator, SoftmaxDetectionGenerator)
    answer = task.serving_signatures({"model": model})["serving_default"](
        tf.constant(two_scene_jpegs(digit_scenes_dir))
    )
    scores = answer["scores"].numpy()
    # softmax over the 6 classes: a class other than the background scores at most 1 - p(bg)
    assert (scores >= 0).all() and (scores <= 1).all() and scores.max() > 0


def test_the_hard_negative_loss_is_the_tasks_class_loss(digit_scenes_dir: str) -> None:
    task = default_task()
    model = task.build_models()["model"]
    images, labels = next(iter(task.build_inputs("train", 4, None)))
    outputs = model(images, training=True)
    losses = {key: float(value) for key, value in task.losses(outputs, labels).items()}
    assert all(np.isfinite(value) for value in losses.values()), losses
    logits = multi_level_flatten(outputs["cls_outputs"], task.input.num_classes)
    targets = tf.maximum(multi_level_flatten(labels["cls_targets"], None), 0)  # -1: ignored
    direct = hard_negative_softmax_loss(logits, targets, labels["cls_weights"])
    positives = float(tf.reduce_sum(labels["box_weights"])) + 1.0
    assert losses["class_loss"] == pytest.approx(float(tf.reduce_sum(direct)) / positives, rel=1e-4)
    assert losses["box_loss"] > 0


def test_a_loss_training_other_scores_than_the_model_gives_is_one_line() -> None:
    task = default_task('DetectionTask.class_loss = "focal"')
    with pytest.raises(UsageError, match="trains sigmoid scores, but ssd_mobilenet_v2_fpnlite"):
        task.build_models()
    with pytest.raises(UsageError, match="DetectionTask.class_loss = 'softmax': use one of focal"):
        default_task('DetectionTask.class_loss = "softmax"')


def test_unknown_parts_are_one_line() -> None:
    with pytest.raises(UsageError, match="ssd.class_activation = 'relu': use one of sigmoid"):
        default_task('ssd.class_activation = "relu"').build_models()
    with pytest.raises(
        UsageError, match="ssd_mobilenet_v2_fpnlite fixes feature_pyramid = 'fpn_lite'"
    ):
        default_task('ssd.feature_pyramid = "fpn"').build_models()
