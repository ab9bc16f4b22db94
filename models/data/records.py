"""TFRecord shards as every input pipeline reads them: the data directory (or a built-in
dataset), per-pipeline sharding, counts, dataset_info.json, and the cheap pre-flight checks
(empty or corrupt shards, undecodable JPEGs) that fail in one line before a run writes."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import tensorflow as tf
from google.protobuf.message import DecodeError

from models.core.errors import UsageError, first_line, nearest
from models.data import builtin as builtin_datasets
from models.data.imagenet_schema import ENCODED, JPEG_START, SPLITS

IMAGE_ERROR = "cannot decode image/encoded as a JPEG"  # Matched ("decode") by core.errors.
NOT_JPEG = f"{IMAGE_ERROR}: it does not start with the JPEG marker ff d8"
READ_BUFFER = 8 * 2**20
READ_THREADS = 16  # Shards opened at once by the checks (remote files cost a round trip each).
_AUTOTUNE = tf.data.AUTOTUNE


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
    (written on first use), resolved once."""

    def __init__(self, data_dir: str | None, builtin: str):
        self._data_dir = data_dir
        self.builtin = builtin
        self._resolved_dir: str | None = None

    @property
    def data_dir(self) -> str:
        """The directory read: --data_dir, or the built-in dataset's."""
        if self._resolved_dir is None:
            self._resolved_dir = resolve_data_dir(self._data_dir, self.builtin)
        return self._resolved_dir

    def damaged_shard(self) -> str | None:
        """'<shard>: record N at byte B is cut short' for the first TFRecord shard of the
        folder whose records do not end where the file does, else None (a record's bytes
        damaged inside the file are not found: its length headers still add up)."""
        for path in sorted(tf.io.gfile.glob(f"{self.data_dir.rstrip('/')}/*-of-*")):
            where = truncated_record(path)
            if where is not None:
                return f"{path}: {where}"
        return None


def truncated_record(path: str) -> str | None:
    """Where a TFRecord file is cut short ('record 3 at byte 4096 is cut short'), or None;
    reads each record's 12-byte header only (length, its CRC) and seeks past its data."""
    size = tf.io.gfile.stat(path).length
    offset, index = 0, 0
    with tf.io.gfile.GFile(path, "rb") as handle:
        while offset < size:
            header = handle.read(12)
            length = int.from_bytes(header[:8], "little") if len(header) == 12 else size
            if offset + 16 + length > size:
                return f"record {index} at byte {offset} is cut short"
            offset += 16 + length
            handle.seek(offset)
            index += 1
    return None


class ShardedFolder(DataFolder):
    """A DataFolder of `<split>-*` shards beside a dataset_info.json: subclasses set `patterns`
    (split -> glob) and define `dataset_info()`."""

    patterns: dict[str, str]

    def dataset_info(self) -> dict:
        raise NotImplementedError

    def files(self, split: str) -> list[str]:
        """Sorted shards of split; UsageError when there are none."""
        return find_files(self.data_dir, self.patterns[check_split(split)], split)

    def num_examples(self, split: str) -> int:
        """Images in split: dataset_info.json's count, else the records counted."""
        key = f"num_{check_split(split)}_examples"
        count = self.dataset_info().get(key)
        return int(count) if count is not None else count_records(self.files(split))


def check_split(split: str) -> str:
    """split itself, or UsageError when it is not one of the pipelines' splits."""
    if split not in SPLITS:
        raise UsageError(
            f"unknown split '{split}'{nearest(split, SPLITS)}; expected train or validation"
        )
    return split


def find_files(data_dir: str, pattern: str, split: str) -> list[str]:
    """Sorted files of split in data_dir matching pattern; UsageError when there are none."""
    files = sorted(tf.io.gfile.glob(os.path.join(data_dir, pattern)))
    if not files:
        raise UsageError(f"--data_dir {data_dir} has no {split} files matching '{pattern}'")
    return files


def sharded_records(
    files: list[str],
    training: bool,
    input_context: tf.distribute.InputContext | None,
    seed: int | None,
    cycle_length: int = 16,
) -> tf.data.Dataset:
    """Serialized records of this pipeline's shard (by file, or by record if files are few)."""
    pipelines = input_context.num_input_pipelines if input_context else 1
    pipeline = input_context.input_pipeline_id if input_context else 0
    by_record = pipelines > 1 and len(files) < pipelines
    dataset = tf.data.Dataset.from_tensor_slices(files)
    if pipelines > 1 and not by_record:
        dataset = dataset.shard(pipelines, pipeline)
    if training and not by_record:  # Record sharding needs the same order in every pipeline.
        dataset = dataset.shuffle(len(files), seed=seed)
    dataset = dataset.interleave(
        lambda path: tf.data.TFRecordDataset(path, buffer_size=READ_BUFFER),
        cycle_length=cycle_length,
        num_parallel_calls=_AUTOTUNE,
        deterministic=by_record or not training or seed is not None,
    )
    return dataset.shard(pipelines, pipeline) if by_record else dataset


def per_replica_batch(
    global_batch_size: int, input_context: tf.distribute.InputContext | None
) -> int:
    """The batch size each replica sees; UsageError when it does not divide evenly."""
    if global_batch_size < 1:
        raise UsageError(f"global batch size must be positive, got {global_batch_size}")
    if input_context is None:
        return global_batch_size
    try:
        return input_context.get_per_replica_batch_size(global_batch_size)
    except ValueError:
        raise UsageError(
            f"global batch size {global_batch_size} is not divisible by "
            f"{input_context.num_replicas_in_sync} replicas"
        ) from None


def count_records(files: Sequence[str]) -> int:
    """Number of records in the TFRecord files (reads them all)."""
    dataset = tf.data.TFRecordDataset(list(files), num_parallel_reads=_AUTOTUNE)
    return int(dataset.reduce(tf.constant(0, tf.int64), lambda count, _: count + 1))


def budgeted(files: Sequence[str], max_bytes: int) -> Iterator[str]:
    """Files in order until max_bytes have been yielded, always including the first."""
    scanned = 0
    for index, path in enumerate(files):
        if index > 0 and scanned >= max_bytes:
            return
        yield path
        scanned += tf.io.gfile.stat(path).length


def read_info(path: str, integer_keys: Sequence[str] = ()) -> dict:
    """dataset_info.json as a dict ({} when absent); UsageError when it is malformed or one
    of integer_keys holds something else."""
    if not tf.io.gfile.exists(path):
        return {}
    try:
        with tf.io.gfile.GFile(path) as f:
            info = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise UsageError(f"{path} is not valid JSON: {error}") from None
    if not isinstance(info, dict):
        raise UsageError(f"{path} must hold a JSON object, not {type(info).__name__}")
    for key in integer_keys:
        value = info.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise UsageError(f"{path}: '{key}' must be an integer, got {value!r}")
    return info


def shard_head(path: str, count: int) -> list[bytes]:
    """The first count records of a shard; UsageError when it is empty (0 bytes) or corrupt."""
    if tf.io.gfile.stat(path).length == 0:
        raise UsageError(f"TFRecord file {path} is empty (0 bytes); rewrite or delete it")
    try:
        return [record.numpy() for record in tf.data.TFRecordDataset(path).take(count)]
    except tf.errors.DataLossError:
        raise UsageError(f"TFRecord file {path} is truncated or corrupt") from None


def shard_heads(files: Sequence[str], count: int) -> list[list[bytes]]:
    """shard_head of every file, a few at a time; the first failing file (in order) raises."""
    with ThreadPoolExecutor(max_workers=READ_THREADS) as pool:
        return list(pool.map(lambda path: shard_head(path, count), files))


@contextlib.contextmanager
def quiet_stderr() -> Iterator[None]:
    """Discards what C code prints on file descriptor 2 meanwhile: libjpeg writes its own lines
    about a corrupt image there, around TensorFlow's error (which the caller reports)."""
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def image_problem(record: bytes) -> str | None:
    """Why the pipeline could not decode this record's image, or None when it can."""
    try:
        values = tf.train.Example.FromString(record).features.feature[ENCODED].bytes_list.value
    except DecodeError:
        return "is not a tf.train.Example"
    if not values:
        return f"has no '{ENCODED}' feature"
    if len(values) > 1:
        return f"has {len(values)} '{ENCODED}' values, not one"
    if not values[0].startswith(JPEG_START):
        return f"{NOT_JPEG} (it starts with {values[0][:4].hex(' ') or 'nothing'})"
    try:
        with quiet_stderr():  # the pipeline's order: the header first, then every pixel
            tf.image.extract_jpeg_shape(values[0])
            tf.io.decode_jpeg(values[0], channels=3)
    except tf.errors.InvalidArgumentError as error:
        return f"{IMAGE_ERROR}: {first_line(error)}"
    return None


def check_images(path: str, records: Sequence[bytes]) -> None:
    """UsageError naming the shard and index of the first record whose image does not decode."""
    for index, record in enumerate(records):
        problem = image_problem(record)
        if problem is not None:
            raise UsageError(f"{path} record {index}: {problem}")
