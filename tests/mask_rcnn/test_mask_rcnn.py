"""Mask R-CNN's default recipe outside training: the exported signature answers boxes in each
image's own pixels and box-relative masks, the losses are finite on real batches, evaluation
scores boxes and masks without the padding, and Faster R-CNN is the same without masks."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from zoo_testing import two_scene_jpegs

from models.core import gin_config, registry
from models.core.errors import UsageError
from models.core.predict import predict_image
from models.core.recipe import RunSpec
from models.core.settings import EvalPlan
from models.data.detection import PAD_SOURCE_ID
from models.tasks.detection_outputs import pasted_masks
from models.tasks.drawing import draw_masks

FASTER = 'run.model = "faster_rcnn_resnet18_fpn"'


def default_task(*bindings: str, data_dir: str | None = None):
    """The default recipe's task (with `bindings`), on the built-in scenes or `data_dir`."""
    gin_config.parse(["mask_rcnn/default.gin"], list(bindings), family="mask_rcnn")
    registry.load_all()
    spec = RunSpec().check()
    return spec.task(model=spec.model, data_dir=data_dir, seed=0)


def test_serving_answers_boxes_in_image_pixels_and_masks(digit_scenes_dir: str) -> None:
    task = default_task()
    models = task.build_models()
    serve = task.serving_signatures(models)["serving_default"]
    answer = serve(tf.constant(two_scene_jpegs(digit_scenes_dir)))  # 128x128 and 256x192
    rows = int(models["model"].detection_generator.get_config()["max_num_detections"])
    assert answer["boxes"].shape == (2, rows, 4)
    assert answer["classes"].shape == answer["scores"].shape == (2, rows)
    assert answer["masks"].shape == (2, rows, 28, 28)  # 14x14 ROI crops, upsampled 2x
    masks = answer["masks"].numpy()
    assert ((masks >= 0) & (masks <= 1)).all()  # probabilities, relative to each box
    for index, (height, width) in enumerate([(128, 128), (256, 192)]):
        count = int(answer["num_detections"][index])
        boxes = answer["boxes"][index, :count].numpy()
        # Model Garden clips to the padded 128x128 canvas (image_info[1]), in these pixels
        canvas = 128 / min(128 / height, 128 / width)
        assert count > 0 and (boxes >= -1).all() and (boxes <= canvas + 1).all()
    empty = serve(tf.constant([], tf.string))
    assert empty["boxes"].shape == (0, rows, 4) and empty["num_detections"].shape == (0,)
    assert empty["masks"].shape == (0, rows, 28, 28)


def test_losses_are_finite_on_one_real_batch(digit_scenes_dir: str) -> None:
    task = default_task()
    model = task.build_models()["model"]
    images, labels = next(iter(task.build_inputs("train", 4, None)))
    assert sorted(labels["rpn_score_targets"]) == ["2", "3", "4", "5"]  # rpn_anchors levels
    assert labels["gt_masks"].shape == (4, 16, 56, 56)  # InstanceSegmentationTask.mask_crop_size
    outputs = model(images, **task.training_inputs(labels), training=True)
    losses = {key: float(value) for key, value in task.losses(outputs, labels).items()}
    assert all(np.isfinite(value) for value in losses.values()), losses
    assert losses["mask_loss"] > 0 and losses["rpn_score_loss"] > 0
    terms = [key for key in losses if key != "model_loss"]
    assert losses["model_loss"] == pytest.approx(sum(losses[key] for key in terms), rel=1e-5)


def test_evaluation_scores_boxes_and_masks_without_the_padding(digit_scenes_dir: str) -> None:
    task = default_task()
    models = task.build_models()
    total = task.num_examples("validation")
    batch = 8
    assert total % batch, "the last batch must hold padding"
    images, labels = next(iter(task.build_inputs("validation", batch, None).skip(total // batch)))
    evaluation = EvalPlan("validation", "validation", "validation", batch, interval=1, steps=-1)
    outputs = task.validation_step((images, labels), models, [], evaluation)
    gathered = tf.nest.map_structure(lambda value: value.numpy(), outputs)
    ids = gathered["groundtruths"]["source_id"]
    assert (ids == PAD_SOURCE_ID).sum() == batch - total % batch
    state = task.aggregate_logs(None, gathered, evaluation)
    assert [len(p["source_id"]) for p in state._predictions] == [total % batch]
    assert PAD_SOURCE_ID not in state._predictions[0]["source_id"]
    metrics = task.reduce_aggregated_logs(state, evaluation)
    assert {"AP", "AP50", "mask_AP", "mask_AP50"} <= set(metrics)
    assert all(-1 <= value <= 1 for value in metrics.values())


def test_predict_tints_the_masks_into_a_png(digit_scenes_dir: str, tmp_path: Path) -> None:
    task = default_task("InstanceSegmentationTask.draw_score_threshold = 0.0")
    models = task.build_models()
    image = sorted(Path(digit_scenes_dir, "images", "val").glob("*.jpg"))[0]
    output = tmp_path / "drawn.png"
    result = predict_image(task, models, str(image), str(output))
    drawn = tf.io.decode_png(output.read_bytes()).numpy()
    assert drawn.shape == (512, 512, 3)
    count = int(result["prediction"].split(" detections >= 0: ")[0])
    assert count > 0  # untrained, every class scores about 1/6: all drawn, masks tinted
    original = tf.image.resize(tf.io.decode_jpeg(image.read_bytes()), [512, 512], "nearest")
    assert (drawn != original.numpy()).any()


def test_faster_rcnn_is_the_same_task_without_masks(digit_scenes_dir: str) -> None:
    task = default_task(FASTER)
    assert not task.include_mask
    models = task.build_models()
    assert models["model"].mask_head is None
    images, labels = next(iter(task.build_inputs("train", 2, None)))
    assert "gt_masks" not in labels
    outputs = models["model"](images, **task.training_inputs(labels), training=True)
    losses = task.losses(outputs, labels)
    assert float(losses["mask_loss"]) == 0 and np.isfinite(float(losses["model_loss"]))
    answer = task.serving_signatures(models)["serving_default"](tf.constant([], tf.string))
    assert "masks" not in answer


def test_a_mask_setting_the_variant_lacks_and_unknown_nms_are_one_line() -> None:
    task = default_task(FASTER, "InstanceSegmentationTask.include_mask = True")
    with pytest.raises(UsageError, match="use the variant mask_rcnn_resnet18_fpn"):
        task.build_models()
    with pytest.raises(UsageError, match="mask_rcnn.nms_version = 'v9': use one of v2, batch"):
        default_task('mask_rcnn.nms_version = "v9"').build_models()
    with pytest.raises(UsageError, match="mask_rcnn.proposal_nms = 'v2': use one of padded, bat"):
        default_task('mask_rcnn.proposal_nms = "v2"').build_models()


def test_mask_ap_without_the_instances_json_is_one_line(
    digit_scenes_dir: str, tmp_path: Path
) -> None:
    for path in Path(digit_scenes_dir).glob("*-of-*"):
        shutil.copy(path, tmp_path)
    shutil.copy(Path(digit_scenes_dir, "dataset_info.json"), tmp_path)
    task = default_task(data_dir=str(tmp_path))
    with pytest.raises(UsageError, match="mask AP needs instances_validation.json beside"):
        task.validate_data(["train", "validation"])
    default_task(FASTER, data_dir=str(tmp_path)).validate_data(["validation"])  # box AP only


def test_box_relative_masks_are_pasted_into_their_boxes_and_tinted() -> None:
    masks = np.ones([1, 28, 28], np.float32)
    pasted = pasted_masks(masks, np.array([[10.0, 20.0, 40.0, 60.0]]), (64, 80))
    assert pasted.shape == (1, 64, 80)
    assert pasted[0, 25, 40] == 1 and pasted[0, 5, 5] == 0 and pasted[0, 25, 70] == 0
    picture = draw_masks(np.zeros([64, 80, 3], np.uint8), pasted)
    assert picture[25, 40].any() and not picture[5, 5].any()
