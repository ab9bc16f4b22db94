"""RetinaNet's default recipe as a user meets it outside training: the exported signature
takes JPEG bytes and answers boxes in each image's own pixels, COCO category ids and scores."""

from __future__ import annotations

from pathlib import Path

import gin
import tensorflow as tf

from models import registry
from models.core import gin_config
from models.core.recipe import RunSpec


def test_serving_takes_jpeg_bytes_and_answers_in_image_pixels(digit_scenes_dir: str) -> None:
    gin_config.parse(["retinanet/default.gin"], [], family="retinanet")
    registry.load_all()
    spec = RunSpec().check()
    task = spec.task(model=spec.model, seed=0)
    models = task.build_models()
    serve = task.serving_signatures(models)["serving_default"]
    images = sorted(Path(digit_scenes_dir, "images", "val").glob("*.jpg"))[:2]
    # a second size: the signature resizes and pads, then maps boxes back to these pixels
    resized = tf.image.resize(tf.io.decode_jpeg(images[1].read_bytes()), [256, 192])
    large = tf.io.encode_jpeg(tf.cast(resized, tf.uint8))
    answer = serve(tf.constant([images[0].read_bytes(), large.numpy()]))
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
