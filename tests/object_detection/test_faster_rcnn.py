"""The Object-Detection-API family's two-stage meta-architecture: its grid anchors are Model
Garden's layout at any scales, the input labels the RPN on them, the model proposes on C4 and
classifies with the ResNet's fifth stage (one box per ROI), and serving decodes on the same
anchors the model trained on."""

from __future__ import annotations

import gin
import numpy as np
import pytest
import tensorflow as tf
from official.vision.ops import anchor
from zoo_testing import two_scene_jpegs

from models.core import gin_config, registry
from models.core.errors import UsageError
from models.core.recipe import RunSpec
from models.data.anchors import GridAnchors, RpnAnchors
from models.object_detection.faster_rcnn import StageFiveBoxHead

RECIPE = "object_detection/faster_rcnn_digit_scenes.gin"


def recipe_task(*bindings: str):
    """The built-in-data Faster R-CNN recipe's task, with gin `bindings`."""
    gin_config.parse([RECIPE], list(bindings), family="object_detection")
    registry.load_all()
    spec = RunSpec().check()
    return spec.task(model=spec.model, seed=0)


def test_listed_scales_lay_anchors_out_as_model_garden_does() -> None:
    listed = RpnAnchors(min_level=3, max_level=4, scales=(1.0, 2**0.5), anchor_size=3.0)
    grid = anchor.Anchor(3, 4, 2, list(listed.aspect_ratios), 3.0, [128, 128]).multilevel_boxes
    boxes = listed.boxes(128)
    assert sorted(boxes) == ["3", "4"] and listed.per_location == 6
    for level, expected in grid.items():
        np.testing.assert_allclose(boxes[level], expected.numpy(), atol=1e-4)


def test_the_api_grid_spans_four_octaves_on_c4() -> None:
    grid = GridAnchors()
    boxes = grid.boxes(640)["4"].reshape(40, 40, 12, 4)
    sides = np.sqrt(
        (boxes[0, 0, :, 2] - boxes[0, 0, :, 0]) * (boxes[0, 0, :, 3] - boxes[0, 0, :, 1])
    )
    np.testing.assert_allclose(sorted(set(np.round(sides))), [64, 128, 256, 512])
    with pytest.raises(UsageError, match="grid_anchors.scales = \\(0.5, -1.0\\)"):
        GridAnchors(scales=(0.5, -1.0))


def test_the_input_labels_the_rpn_on_the_grid(digit_scenes_dir: str) -> None:
    task = recipe_task()
    images, labels = next(iter(task.build_inputs("train", 4, None)))
    expected = GridAnchors().boxes(128)["4"]  # 8x8 cells x 12 anchors
    np.testing.assert_allclose(labels["anchor_boxes"]["4"][0], expected)
    scores = labels["rpn_score_targets"]["4"].numpy()
    assert scores.shape == (4, 8, 8, 12)
    assert (scores == 1).any(axis=(1, 2, 3)).all()  # every scene has a positive anchor
    assert ((scores >= 0).sum(axis=(1, 2, 3)) <= 32).all()  # grid_anchors.batch_size_per_im
    _, eval_labels = next(iter(task.build_inputs("validation", 4, None)))
    np.testing.assert_allclose(eval_labels["anchor_boxes"]["4"][0], expected)


def test_c4_proposals_and_a_stage_five_box_classifier(digit_scenes_dir: str) -> None:
    task = recipe_task()
    model = task.build_models()["model"]
    assert list(model.backbone.output_specs) == ["4"]
    # the fifth stage is the box classifier's, not the backbone's
    assert not [v for v in model.backbone.variables if "block_group4" in v.name]
    assert isinstance(model.detection_head[0], StageFiveBoxHead)
    assert model.get_config()["class_agnostic_bbox_pred"]
    images, labels = next(iter(task.build_inputs("train", 2, None)))
    outputs = model(images, **task.training_inputs(labels), training=True)
    assert outputs["class_outputs"].shape == (2, 16, 6)  # sampled ROIs x (5 digits + bg)
    assert outputs["box_outputs"].shape == (2, 16, 4)  # one box per ROI
    assert outputs["rpn_scores"]["4"].shape == (2, 8, 8, 12)
    losses = {key: float(value) for key, value in task.losses(outputs, labels).items()}
    assert all(np.isfinite(value) for value in losses.values()), losses


def test_serving_decodes_on_the_trained_anchors(digit_scenes_dir: str) -> None:
    task = recipe_task()
    anchors = task.input.fixed_anchor_boxes()
    np.testing.assert_allclose(anchors["4"], GridAnchors().boxes(128)["4"])
    models = task.build_models()
    answer = task.serving_signatures(models)["serving_default"](
        tf.constant(two_scene_jpegs(digit_scenes_dir))
    )
    assert answer["boxes"].shape == (2, 50, 4) and "masks" not in answer
    scores = answer["scores"].numpy()
    assert (scores >= 0).all() and (scores <= 1).all()


def test_a_mask_or_other_levels_are_one_line() -> None:
    with pytest.raises(UsageError, match="faster_rcnn_resnet50_v1 fixes include_mask"):
        recipe_task("InstanceSegmentationTask.include_mask = True").build_models()
    gin.clear_config()
    with pytest.raises(UsageError, match="grid_anchors.min_level and max_level must be 4"):
        recipe_task("grid_anchors.min_level = 3").build_models()
