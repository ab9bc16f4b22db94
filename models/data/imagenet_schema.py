"""The schema of ImageNet-style classification TFRecords, as imagenet_to_gcs.py writes them.

Feature keys, label convention, split file names and dataset_info.json, with the writers of
one record and of the info file. TensorFlow is imported lazily so that CLI errors stay instant.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from PIL import Image

if TYPE_CHECKING:
    import tensorflow as tf

ENCODED = "image/encoded"
LABEL = "image/class/label"
LABEL_OFFSET = 1  # Record labels are 1-based: class index + LABEL_OFFSET.
SPLITS = ("train", "validation")
SPLIT_PREFIXES = tuple(f"{split}-" for split in SPLITS)  # Shards: <split>-%05d-of-%05d.
INFO_FILE = "dataset_info.json"
INFO_COUNT_KEYS = {"train": "num_train_examples", "validation": "num_eval_examples"}
JPEG_QUALITY = 95
JPEG_START = b"\xff\xd8"  # Every JPEG starts with this start-of-image marker.


def encode_jpeg(image: Image.Image, quality: int = JPEG_QUALITY) -> bytes:
    """JPEG bytes of a PIL image converted to RGB."""
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="JPEG", quality=quality)
    return buffer.getvalue()


def to_rgb_jpeg(data: bytes, quality: int = JPEG_QUALITY) -> tuple[bytes, int, int]:
    """(JPEG bytes, height, width): RGB JPEGs pass through; PNG, CMYK, grayscale are re-encoded."""
    with Image.open(io.BytesIO(data)) as image:
        if image.format == "JPEG" and image.mode == "RGB":
            return data, image.height, image.width
        return encode_jpeg(image, quality), image.height, image.width


def bytes_feature(value: bytes) -> tf.train.Feature:
    """A one-value bytes feature of a tf.train.Example."""
    import tensorflow as tf

    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))


def int_feature(value: int) -> tf.train.Feature:
    """A one-value int64 feature of a tf.train.Example."""
    import tensorflow as tf

    return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))


def image_example(
    encoded: bytes, label: int, synset: str, filename: str, height: int, width: int
) -> tf.train.Example:
    """Builds the tf.train.Example of one RGB JPEG with every imagenet_to_gcs feature."""
    import tensorflow as tf

    feature = {
        ENCODED: bytes_feature(encoded),
        "image/format": bytes_feature(b"JPEG"),
        "image/filename": bytes_feature(filename.encode()),
        LABEL: int_feature(label),
        "image/class/synset": bytes_feature(synset.encode()),
        "image/height": int_feature(height),
        "image/width": int_feature(width),
        "image/colorspace": bytes_feature(b"RGB"),
        "image/channels": int_feature(3),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature))


def write_dataset_info(
    output_dir: str | os.PathLike, classes: Sequence[str], num_train: int, num_eval: int
) -> dict[str, Any]:
    """Writes and returns dataset_info.json: counts and label convention for ClassificationInput."""
    import tensorflow as tf

    info = {
        "num_classes": len(classes),
        "label_offset": LABEL_OFFSET,
        INFO_COUNT_KEYS["train"]: num_train,
        INFO_COUNT_KEYS["validation"]: num_eval,
        "classes": list(classes),
    }
    path = os.path.join(os.fspath(output_dir), INFO_FILE)
    with tf.io.gfile.GFile(path, "w") as f:
        json.dump(info, f, indent=2)
    return info
