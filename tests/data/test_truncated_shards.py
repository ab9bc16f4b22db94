"""Locating a TFRecord shard cut short, which TensorFlow's DataLossError names only by byte
offset: a run that meets one mid-way says which shard it is (models/core/experiment.py)."""

from __future__ import annotations

import tensorflow as tf

from models.data.folder import DataFolder
from models.data.records import truncated_record


def _write(path, records: list[bytes]) -> None:
    with tf.io.TFRecordWriter(str(path)) as writer:
        for record in records:
            writer.write(record)


def test_a_shard_cut_short_is_named_with_the_record_it_cuts(tmp_path):
    _write(tmp_path / "train-00000-of-00002", [b"a" * 100, b"b" * 50])
    _write(tmp_path / "train-00001-of-00002", [b"c" * 100, b"d" * 50, b"e" * 10])
    folder = DataFolder(str(tmp_path), "digits")
    assert folder.damaged_shard() is None
    second = tmp_path / "train-00001-of-00002"
    second.write_bytes(second.read_bytes()[:-20])  # into the third record's data
    assert truncated_record(str(second)) == "record 2 at byte 182 is cut short"
    assert folder.damaged_shard() == f"{second}: record 2 at byte 182 is cut short"
    second.write_bytes(second.read_bytes()[:120])  # into the second record's header
    assert truncated_record(str(second)) == "record 1 at byte 116 is cut short"
