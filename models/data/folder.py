"""The folder an input pipeline reads (--data_dir, else a built-in dataset written on first use)
and the base every schema's pipeline builds on: a split's files, read by the schema's
`InputReader` (models/data/reader.py)."""

from __future__ import annotations

import os

import tensorflow as tf

from models.core.errors import UsageError
from models.data import builtin as builtin_datasets
from models.data.imagenet_schema import INFO_FILE
from models.data.reader import InputReader
from models.data.records import (
    check_split,
    count_records,
    find_files,
    read_info,
    truncated_record,
)


def resolve_data_dir(data_dir: str | None, builtin: str) -> str:
    """--data_dir when it is a directory, else the built-in dataset (written on first use)."""
    if data_dir is None:
        return builtin_datasets.prepare(builtin)
    if not tf.io.gfile.isdir(data_dir):
        what = "is not a directory" if tf.io.gfile.exists(data_dir) else "does not exist"
        raise UsageError(f"--data_dir {data_dir} {what}")
    return data_dir


class DataFolder:
    """The folder an input pipeline reads: --data_dir, else the built-in dataset `builtin`
    (written on first use), resolved once. A schema defines `files(split)` and
    `reader(split)`; `dataset` is the same for all."""

    #: dataset_info.json keys whose values must be integers where present.
    info_integers: tuple[str, ...] = ()
    #: The command that writes dataset_info.json, when a folder without one cannot be read.
    info_writer: str | None = None

    def __init__(self, data_dir: str | None, builtin: str):
        self._data_dir = data_dir
        self.builtin = builtin
        self._resolved_dir: str | None = None
        self._info: dict | None = None
        self._counted: dict[str, int] = {}

    @property
    def data_dir(self) -> str:
        """The directory read: --data_dir, or the built-in dataset's."""
        if self._resolved_dir is None:
            self._resolved_dir = resolve_data_dir(self._data_dir, self.builtin)
        return self._resolved_dir

    def files(self, split: str) -> list[str]:
        """The files of split, sorted; UsageError for an unknown split or none found."""
        raise NotImplementedError

    def dataset_info(self) -> dict:
        """data_dir/dataset_info.json, read once: {} when absent, unless `info_writer` says
        the folder needs one; UsageError when it is malformed."""
        if self._info is None:
            path = os.path.join(self.data_dir, INFO_FILE)
            if self.info_writer and not tf.io.gfile.exists(path):
                raise UsageError(
                    f"--data_dir {self.data_dir} has no {INFO_FILE}: write the data with "
                    f"{self.info_writer}"
                )
            self._info = read_info(path, self.info_integers)
        return self._info

    def counted(self, split: str) -> int:
        """The records of split, counted once (when dataset_info.json gives no count)."""
        if split not in self._counted:
            self._counted[split] = count_records(self.files(split))
        return self._counted[split]

    def reader(self, split: str) -> InputReader:
        """How this schema reads split (training: 'train'; any other split is evaluated)."""
        raise NotImplementedError

    def dataset(
        self,
        split: str,
        global_batch_size: int,
        input_context: tf.distribute.InputContext | None = None,
        seed: int | None = None,
    ) -> tf.data.Dataset:
        """Per-replica batches of split for this input pipeline (InputReader.read)."""
        files, training = self.files(split), split == "train"
        return self.reader(split).read(files, training, global_batch_size, input_context, seed)

    def damaged_shard(self) -> str | None:
        """'<shard>: record N at byte B is cut short' for the first TFRecord shard of the
        folder whose records do not end where the file does, else None (a record's bytes
        damaged inside the file are not found: its length headers still add up)."""
        for path in sorted(tf.io.gfile.glob(f"{self.data_dir.rstrip('/')}/*-of-*")):
            where = truncated_record(path)
            if where is not None:
                return f"{path}: {where}"
        return None


class ShardedFolder(DataFolder):
    """A DataFolder of `<split>-*` shards beside a dataset_info.json: subclasses set `patterns`
    (split -> glob)."""

    patterns: dict[str, str]

    def files(self, split: str) -> list[str]:
        """Sorted shards of split; UsageError when there are none."""
        return find_files(self.data_dir, self.patterns[check_split(split)], split)

    def num_examples(self, split: str) -> int:
        """Examples in split: dataset_info.json's count, else the records counted."""
        count = self.dataset_info().get(f"num_{check_split(split)}_examples")
        return int(count) if count is not None else self.counted(split)
