"""Sharded TFRecord writing in which no reader ever sees a half-written shard."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from tqdm import tqdm

if TYPE_CHECKING:
    import tensorflow as tf

T = TypeVar("T")


def write_examples(
    items: Sequence[T],
    to_example: Callable[[T], tf.train.Example],
    output_dir: str | os.PathLike,
    split: str,
    num_shards: int,
    progress: bool = False,
) -> list[str]:
    """Writes items as `<split>-%05d-of-%05d` shards of near-equal contiguous runs."""
    import tensorflow as tf  # Lazy: CLI usage errors stay instant.

    shards = max(1, min(num_shards, len(items))) if items else 0
    paths = []
    with tqdm(total=len(items), desc=split, unit="img", disable=not progress) as bar:
        for shard in range(shards):
            name = f"{split}-{shard:05d}-of-{shards:05d}"
            path = os.path.join(os.fspath(output_dir), name)
            partial = os.path.join(os.fspath(output_dir), f".{name}.partial")
            begin, end = shard * len(items) // shards, (shard + 1) * len(items) // shards
            try:
                with tf.io.TFRecordWriter(partial) as writer:
                    for item in items[begin:end]:
                        writer.write(to_example(item).SerializeToString())
                        bar.update()
            except BaseException:
                tf.io.gfile.remove(partial)
                raise
            tf.io.gfile.rename(partial, path, overwrite=True)  # never a half-written shard
            paths.append(path)
    return paths
