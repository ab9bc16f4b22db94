"""MLPerf's SSD-ResNet34: its 8732 default boxes as MLPerf lays them out, the shared pipeline
labelling them, its layers' shapes and its parameter count against the published figure."""

from __future__ import annotations

import gin
import numpy as np
import pytest
import tensorflow as tf

from models.core import registry
from models.core.errors import UsageError
from models.data.anchors import SsdAnchors
from models.object_detection.ssd_resnet34 import PUBLISHED
from models.tasks.detection import DetectionTask


def test_default_boxes_are_mlperfs_8732() -> None:
    anchors = SsdAnchors()
    boxes = anchors.boxes()
    assert anchors.per_location() == {"3": 4, "4": 6, "5": 6, "6": 6, "7": 4, "8": 4}
    assert sum(level.size // 4 for level in boxes.values()) == 8732
    first = boxes["3"][0, 0].reshape(-1, 4)  # cell (0, 0) of the 38x38 map: centre 4, 4
    np.testing.assert_allclose(first[0], [-6.5, -6.5, 14.5, 14.5])  # 21 px square
    side = np.sqrt(21 * 45)
    np.testing.assert_allclose(first[1], [4 - side / 2, 4 - side / 2, 4 + side / 2, 4 + side / 2])
    wide = first[2]  # aspect ratio 2: 21 * sqrt(2) wide, 21 / sqrt(2) high
    np.testing.assert_allclose(wide[3] - wide[1], 21 * np.sqrt(2), rtol=1e-6)
    np.testing.assert_allclose(wide[2] - wide[0], 21 / np.sqrt(2), rtol=1e-6)
    last = boxes["8"][0, 0].reshape(-1, 4)  # the 1x1 map: 261 * sqrt(2) wide, clipped to 300
    np.testing.assert_allclose(last[2][[1, 3]], [0, 300], atol=1e-4)
    np.testing.assert_allclose(last[2][2] - last[2][0], 261 / np.sqrt(2), rtol=1e-6)


def test_mismatched_layouts_are_one_line() -> None:
    with pytest.raises(UsageError, match="scales needs 7 entries"):
        SsdAnchors(scales=(21, 45))
    gin.parse_config(["ssd_anchors.image_size = 300"])
    with pytest.raises(UsageError, match="ssd_resnet34.image_size = 320, but ssd_anchors"):
        registry.create_model("ssd_resnet34_300", image_size=320)


def test_the_input_labels_the_default_boxes_for_the_model(digit_scenes_dir: str) -> None:
    gin.parse_config(
        ["detection_input.image_size = 300", "detection_input.builtin = 'digit_scenes'"]
    )
    task = DetectionTask(model="ssd_resnet34_300", seed=0)
    assert isinstance(task.input.anchors, SsdAnchors)
    images, labels = next(iter(task.build_inputs("train", 2, None)))
    assert images.shape == (2, 300, 300, 3)
    assert {k: v.shape[1:] for k, v in labels["cls_targets"].items()} == {
        "3": (38, 38, 4),
        "4": (19, 19, 6),
        "5": (10, 10, 6),
        "6": (5, 5, 6),
        "7": (3, 3, 4),
        "8": (1, 1, 4),
    }
    assert float(tf.reduce_sum(labels["box_weights"])) > 0  # some boxes match the digits
    np.testing.assert_allclose(labels["anchor_boxes"]["3"][0], SsdAnchors().boxes()["3"])
    model = task.build_models()["model"]
    outputs = model(images, training=True)
    assert {k: v.shape[1:] for k, v in outputs["cls_outputs"].items()}["4"] == (19, 19, 6 * 6)
    losses = task.losses(tf.nest.map_structure(lambda x: tf.cast(x, tf.float32), outputs), labels)
    assert np.isfinite(float(losses["model_loss"]))


@pytest.mark.slow
def test_parameters_are_within_one_percent_of_the_published_figure() -> None:
    model = registry.create_model("ssd_resnet34_300", num_classes=81)
    measured = registry.count_parameters(model)
    assert measured == 19_972_534  # MLPerf's ssd300.py layers, counted by hand
    assert abs(measured - PUBLISHED.value) / PUBLISHED.value < 0.01
