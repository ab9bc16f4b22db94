"""The output folder of the text converters (BERT pretraining, SQuAD, parallel text): one
vocabulary and one set of shapes per folder, each split's shards published only when all are
written, and dataset_info.json merged split by split."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Mapping
from typing import Any

from models.core.errors import UsageError
from models.data.imagenet_schema import INFO_FILE
from models.data.text import VOCAB_FILE, read_vocab, write_vocab


def prepare_output_dir(
    output_dir: str, split: str, tokens: list[str], shapes: Mapping[str, Any]
) -> None:
    """Creates output_dir; UsageError, before anything is written, when the split is already
    there (never overwritten), or the folder's vocabulary (written with its first split) or
    shapes (a model reads one shape for all splits) are others."""
    import tensorflow as tf

    check_split_absent(output_dir, split)
    tf.io.gfile.makedirs(output_dir)
    existing = os.path.join(output_dir, VOCAB_FILE)
    if tf.io.gfile.exists(existing) and read_vocab(existing) != tokens:
        raise UsageError(
            f"--output_dir {output_dir} holds splits made with another vocabulary ({existing})"
        )
    check_shapes(output_dir, shapes)


def check_shapes(output_dir: str, shapes: Mapping[str, Any]) -> None:
    """UsageError when the splits already in output_dir were written with other shapes (a
    model reads one shape for all splits)."""
    from models.data.records import read_info

    old = read_info(os.path.join(output_dir, INFO_FILE))
    for key, value in shapes.items():
        if key in old and old[key] != value:
            raise UsageError(
                f"--output_dir {output_dir} holds splits with {key} {old[key]}, not {value}"
            )


def check_split_absent(output_dir: str, split: str) -> None:
    """UsageError when output_dir is a file or already holds shards of split (a converter's
    first check, before any slow work)."""
    import tensorflow as tf

    if tf.io.gfile.exists(output_dir) and not tf.io.gfile.isdir(output_dir):
        raise UsageError(f"--output_dir {output_dir} is a file, not a folder")
    if tf.io.gfile.glob(os.path.join(output_dir, f"{split}-*-of-*")):
        raise UsageError(
            f"--output_dir {output_dir} already holds {split} shards; remove them or choose "
            "another --output_dir or --split"
        )


@contextlib.contextmanager
def staged_shards(output_dir: str, split: str, count: int) -> Iterator[list[str]]:
    """Paths to write `count` shards of split to: hidden `.partial` files, renamed to
    `<split>-%05d-of-%05d` when the block ends, removed when it raises."""
    import tensorflow as tf

    names = [f"{split}-{index:05d}-of-{count:05d}" for index in range(count)]
    partial = [os.path.join(output_dir, f".{name}.partial") for name in names]
    try:
        yield partial
    except BaseException:
        for path in partial:
            if tf.io.gfile.exists(path):
                tf.io.gfile.remove(path)
        raise
    for path, name in zip(partial, names, strict=True):
        tf.io.gfile.rename(path, os.path.join(output_dir, name), overwrite=True)


def finish_split(output_dir: str, info: Mapping[str, Any], tokens: list[str]) -> dict[str, Any]:
    """Merges a written split's `info` into dataset_info.json (atomically) and writes the
    vocabulary beside the first split; returns the merged info."""
    import tensorflow as tf

    merged = merge_info(output_dir, info)
    if not tf.io.gfile.exists(os.path.join(output_dir, VOCAB_FILE)):
        write_vocab(tokens, os.path.join(output_dir, VOCAB_FILE))
    return merged


def merge_info(output_dir: str, info: Mapping[str, Any]) -> dict[str, Any]:
    """Merges `info` into output_dir's dataset_info.json, atomically; returns the merged info."""
    import tensorflow as tf

    from models.data.records import read_info

    path = os.path.join(output_dir, INFO_FILE)
    merged = {**read_info(path), **info}
    with tf.io.gfile.GFile(f"{path}.partial", "w") as file:
        file.write(json.dumps(merged, indent=1, sort_keys=True) + "\n")
    tf.io.gfile.rename(f"{path}.partial", path, overwrite=True)
    return merged
