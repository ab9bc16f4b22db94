"""RetinaNet's default recipe as a user meets it outside training: the exported signature
takes JPEG bytes and answers boxes in each image's own pixels, COCO category ids and scores."""

from __future__ import annotations

from pathlib import Path

import gin
import pytest
import tensorflow as tf
from zoo_testing import two_scene_jpegs

from models.core import gin_config, registry
from models.core.errors import UsageError
from models.core.predict import check_paths, predict_image
from models.core.recipe import RunSpec


def default_task_and_models(*bindings: str):
    """The default recipe's task and (untrained) model."""
    gin_config.parse(["retinanet/default.gin"], list(bindings), family="retinanet")
    registry.load_all()
    spec = RunSpec().check()
    task = spec.task(model=spec.model, seed=0)
    return task, task.build_models()


def test_serving_takes_jpeg_bytes_and_answers_in_image_pixels(digit_scenes_dir: str) -> None:
    task, models = default_task_and_models()
    serve = task.serving_signatures(models)["serving_default"]
    # a second size: the signature resizes and pads, then maps boxes back to these pixels
    answer = serve(tf.constant(two_scene_jpegs(digit_scenes_dir)))
    rows = int(models["model"].detection_generator.get_config()["max_num_detections"])
    assert answer["boxes"].shape == (2, rows, 4)
    assert answer["classes"].shape == answer["scores"].shape == (2, rows)
    for index, (height, width) in enumerate([(128, 128), (256, 192)]):
        count = int(answer["num_detections"][index])
        boxes = answer["boxes"][index, :count].numpy()
        assert (boxes >= -1).all() and (boxes[:, 2] <= height + 1).all()
        assert (boxes[:, 3] <= width + 1).all()
    empty = serve(tf.constant([], tf.string))
    assert empty["boxes"].shape == (0, rows, 4) and empty["num_detections"].shape == (0,)
    gin.clear_config()


def test_predict_draws_the_detections_into_a_png(digit_scenes_dir: str, tmp_path: Path) -> None:
    # untrained, every score is near the focal-loss prior (0.01): keep them all
    task, models = default_task_and_models(
        "DetectionTask.draw_score_threshold = 0.0", "detections.pre_nms_score_threshold = 0.0"
    )
    image = sorted(Path(digit_scenes_dir, "images", "val").glob("*.jpg"))[0]
    output = tmp_path / "drawn.png"
    result = predict_image(task, models, str(image), str(output))
    drawn = tf.io.decode_png(output.read_bytes()).numpy()
    assert drawn.shape == (512, 512, 3)  # 128 px enlarged 4x so that labels are legible
    assert result["prediction"].startswith("100 detections >= 0: ")  # every NMS row drawn
    assert result["prediction"].endswith(" (and 95 more)")  # the summary names the best 5
    original = tf.image.resize(tf.io.decode_jpeg(image.read_bytes()), [512, 512], "nearest")
    assert (drawn != original.numpy()).any()  # boxes and labels were drawn
    gin.clear_config()


def test_with_nothing_over_the_threshold_the_best_are_drawn_faded(digit_scenes_dir, tmp_path):
    """An early model scores everything below the drawing threshold: the drawing shows its
    best 3 guesses, pale and labelled as below it, rather than the bare scene."""
    task, models = default_task_and_models(
        "DetectionTask.draw_score_threshold = 0.9", "detections.pre_nms_score_threshold = 0.0"
    )
    image = sorted(Path(digit_scenes_dir, "images", "val").glob("*.jpg"))[0]
    output = tmp_path / "drawn.png"
    result = predict_image(task, models, str(image), str(output))
    assert result["prediction"].startswith("no detection >= 0.9; the best 3, drawn faded: ")
    drawn = tf.io.decode_png(output.read_bytes()).numpy()
    original = tf.image.resize(tf.io.decode_jpeg(image.read_bytes()), [512, 512], "nearest")
    assert (drawn != original.numpy()).any()
    gin.clear_config()


def test_predict_refuses_what_is_not_a_jpeg(tmp_path: Path) -> None:
    task, models = default_task_and_models()
    (tmp_path / "a.png").write_bytes(b"\x89PNG....")
    with pytest.raises(UsageError, match="not a JPEG"):
        predict_image(task, models, str(tmp_path / "a.png"), str(tmp_path / "out.png"))
    with pytest.raises(UsageError, match="needs --image=FILE.jpg and --output=FILE.png"):
        check_paths(str(tmp_path / "a.png"), None)
    with pytest.raises(UsageError, match="name it <something>.png"):
        check_paths(str(tmp_path / "a.png"), str(tmp_path / "out.jpg"))
    gin.clear_config()


def test_an_unknown_nms_version_is_one_line() -> None:
    with pytest.raises(UsageError, match="detections.nms_version = 'v9': use one of v2, batch"):
        default_task_and_models('detections.nms_version = "v9"')
    gin.clear_config()
