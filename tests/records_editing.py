"""Edits of TFRecord shards the data and hostile-input tests share: damaged images in place."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import tensorflow as tf


def rewrite_shard(path: Path, change: Callable[[int, tf.train.Example], None]) -> None:
    """Rewrites one shard, letting change(index, example) edit each record in place."""
    examples = [tf.train.Example.FromString(r.numpy()) for r in tf.data.TFRecordDataset(str(path))]
    for index, example in enumerate(examples):
        change(index, example)
    with tf.io.TFRecordWriter(str(path)) as writer:
        for example in examples:
            writer.write(example.SerializeToString())


def set_image(example: tf.train.Example, encoded: bytes) -> None:
    """Replaces the record's image/encoded bytes."""
    example.features.feature["image/encoded"].bytes_list.value[0] = encoded


def damaged_header(example: tf.train.Example) -> bytes:
    """The record's own JPEG cut inside its header: it starts as a JPEG, libjpeg rejects it."""
    return example.features.feature["image/encoded"].bytes_list.value[0][:200]


def bad_after_sample(data: Path, split: str, image: Callable[[tf.train.Example], bytes]) -> None:
    """Every record but the first two of each shard of split gets image(example) as its bytes."""
    for shard in sorted(data.glob(f"{split}-*")):
        rewrite_shard(shard, lambda i, e: set_image(e, image(e)) if i >= 2 else None)
