"""TFRecord shards as every input pipeline finds and checks them: files by split, counts,
dataset_info.json, and the cheap pre-flight checks (empty, truncated or corrupt shards,
undecodable JPEGs) that fail in one line before a run writes."""

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
from models.data.imagenet_schema import ENCODED, JPEG_START, SPLITS

IMAGE_ERROR = "cannot decode image/encoded as a JPEG"  # Matched ("decode") by core.errors.
NOT_JPEG = f"{IMAGE_ERROR}: it does not start with the JPEG marker ff d8"
READ_THREADS = 16  # Shards opened at once by the checks (remote files cost a round trip each).
_AUTOTUNE = tf.data.AUTOTUNE


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


def check_parses(files: Sequence[str], schema: dict, what: str, count: int = 2) -> None:
    """UsageError `<shard> does not hold <what>: <TensorFlow's reason>` for the first of the
    first `count` records of each shard that does not parse as `schema`."""
    for path, records in zip(files, shard_heads(files, count), strict=True):
        for record in records:
            try:
                tf.io.parse_single_example(record, schema)
            except tf.errors.InvalidArgumentError as error:
                reason = error.message.splitlines()[0]
                raise UsageError(f"{path} does not hold {what}: {reason}") from None


def features_by_id(
    files: Sequence[str], names: Sequence[str], key: str = "unique_id"
) -> list[tuple[bytes, ...]]:
    """Bytes features of a split's records, a tuple a record, in the order of the records'
    `key` (their index in the split)."""
    schema = {name: tf.io.FixedLenFeature([], tf.string) for name in names}
    schema[key] = tf.io.FixedLenFeature([], tf.int64)
    records = (
        tf.data.TFRecordDataset(list(files))
        .batch(1024)
        .map(lambda batch: tf.io.parse_example(batch, schema))
    )
    found: dict[int, tuple[bytes, ...]] = {}
    for batch in records.as_numpy_iterator():
        for row, index in enumerate(batch[key]):
            found[int(index)] = tuple(batch[name][row] for name in names)
    return [found[index] for index in sorted(found)]


def texts_by_id(
    files: Sequence[str], names: tuple[str, str], key: str = "unique_id"
) -> tuple[list[str], list[str]]:
    """Two UTF-8 text features of a split's records (a sentence pair, an utterance id and its
    transcript), each list in the order of the records' `key` (their index in the split)."""
    rows = features_by_id(files, names, key)
    return [a.decode("utf-8") for a, _ in rows], [b.decode("utf-8") for _, b in rows]
