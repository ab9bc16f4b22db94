"""What a user does with a trained run, through the CLI, checked on a memorised one
(tests/memorisation.py): `--mode=export`, the export's `serving_default` answered in a fresh
process that imports only TensorFlow, and `--mode=predict`. The export must answer as the
memorised model does: a classifier names the batch's labels, a detector's best box has a class
of its scene, a segmenter's class map matches the scene's mask; a GAN's turns noise into
images."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import tensorflow as tf
from memorisation import Memorise, export, run_mode
from one_batch_data import one_batch
from PIL import Image
from zoo_testing import PYTHON

IMAGES = 4  # served and compared per check
# Reads the SavedModel named in stdin's JSON and answers its "images" (JPEG files) or, for a
# generator, "noise" rows of the width its signature declares (classes 0, 1, ...).
FRESH_SERVING = """
import json, sys, tensorflow as tf
ask = json.load(sys.stdin)
serve = tf.saved_model.load(ask["export"]).signatures["serving_default"]
if "images" in ask:
    out = serve(image_bytes=tf.constant([open(p, "rb").read() for p in ask["images"]]))
else:
    width = serve.structured_input_signature[1]["noise"].shape[1]
    noise = tf.random.stateless_normal([ask["noise"], width], seed=[0, 0])
    out = serve(noise=noise, label=tf.range(ask["noise"]))
print(json.dumps({k: [v.dtype.name, v.numpy().tolist()] for k, v in out.items()}))
"""


def serve_fresh(request: dict, env: dict) -> dict[str, np.ndarray]:
    """The export's answer to `request` (see FRESH_SERVING), from a new process."""
    result = subprocess.run(
        [PYTHON, "-c", FRESH_SERVING],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    answer = json.loads(result.stdout.strip().splitlines()[-1])
    return {k: np.array(values, dtype=dtype) for k, (dtype, values) in answer.items()}


def batch_examples(spec: Memorise, count: int) -> list[tf.train.Example]:
    """The first `count` examples of the check's one-batch data."""
    shard = next(Path(one_batch(spec.data, spec.examples)).glob("validation-*"))
    records = tf.data.TFRecordDataset(str(shard)).take(count)
    return [tf.train.Example.FromString(r.numpy()) for r in records]


def feature(example: tf.train.Example, key: str) -> list:
    kind = example.features.feature[key]
    return list(getattr(kind, kind.WhichOneof("kind")).value)


def check_user_modes(spec: Memorise, run: Path, env: dict, workdir: Path) -> None:
    """Export, serve in a fresh process, predict: each as a user runs it."""
    exported = export(spec, run, env)
    if spec.loss is None:  # a GAN
        images = serve_fresh({"export": exported, "noise": IMAGES}, env)["images"]
        assert images.dtype == np.uint8 and images.shape[0] == IMAGES and images.std() > 0
        grid = workdir / "grid.png"
        run_mode(spec, run, env, "--mode=predict", f"--num_images={IMAGES}", f"--output={grid}")
        assert Image.open(grid).width > images.shape[2]
        return
    examples = batch_examples(spec, IMAGES)
    paths = []
    for i, example in enumerate(examples):
        paths.append(workdir / f"example-{i}.jpg")
        paths[-1].write_bytes(feature(example, "image/encoded")[0])
    answer = serve_fresh({"export": exported, "images": [str(p) for p in paths]}, env)
    ANSWER_CHECKS[spec.data](spec, examples, answer)
    drawing = workdir / "drawn.png"
    printed = run_mode(
        spec, run, env, "--mode=predict", f"--image={paths[0]}", f"--output={drawing}"
    )
    (width, height), (drawn_width, drawn_height) = (
        Image.open(paths[0]).size,
        Image.open(drawing).size,
    )
    zoom = drawn_width // width  # small images are drawn enlarged
    assert (drawn_width, drawn_height) == (zoom * width, zoom * height), printed[-2000:]


def _classes(spec: Memorise, examples: list, answer: dict) -> None:
    """Every served class is the example's label (the records' labels start at 1)."""
    from models.data.classification import ClassificationInput

    offset = ClassificationInput(data_dir=one_batch(spec.data, spec.examples)).label_offset
    labels = [feature(e, "image/class/label")[0] - offset for e in examples]
    assert answer["classes"].tolist() == labels


def _detections(spec: Memorise, examples: list, answer: dict) -> None:
    """Each image's best detection has a class of its scene."""
    for example, classes, scores in zip(examples, answer["classes"], answer["scores"], strict=True):
        assert classes[np.argmax(scores)] in feature(example, "image/object/class/label")


def _class_maps(spec: Memorise, examples: list, answer: dict) -> None:
    """The served class maps agree with the scenes' masks on 90% of the pixels."""
    for example, served in zip(examples, answer["class_map"], strict=True):
        mask = tf.io.decode_png(feature(example, "image/segmentation/class/encoded")[0])[..., 0]
        height, width = mask.shape
        assert np.mean(served[:height, :width] == mask.numpy()) > 0.9


ANSWER_CHECKS = {"digits": _classes, "digit_scenes": _detections, "digit_scenes_voc": _class_maps}
