"""Shared fixtures: the built-in digits written once per session into a temporary cache."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
import tensorflow as tf


@pytest.fixture(scope="session")
def zoo_cache() -> Path:
    """The session's private ZOO_CACHE_DIR, set up by tests/conftest.py."""
    return Path(os.environ["ZOO_CACHE_DIR"])


def _read_examples(paths: list[str]) -> list[tf.train.Example]:
    """All records of the files, in order, as tf.train.Example protos."""
    return [
        tf.train.Example.FromString(record.numpy())
        for record in tf.data.TFRecordDataset(sorted(paths))
    ]


@pytest.fixture
def read_examples() -> Callable[[list[str]], list[tf.train.Example]]:
    """Reader of TFRecord files into tf.train.Example protos."""
    return _read_examples


def feature(example: tf.train.Example, key: str):
    """The single value of one feature of an Example (bytes or int)."""
    value = example.features.feature[key]
    return (value.bytes_list.value or value.int64_list.value)[0]


@pytest.fixture
def value_of() -> Callable:
    """Accessor of a single-valued Example feature."""
    return feature
