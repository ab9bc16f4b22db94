"""The one input reader: sharding across input pipelines, shuffle and repeat, parsing,
evaluation padding, batching and prefetch, written once for every schema.

A schema (classification, detection, segmentation, pretraining, sentences, question answering,
translation) supplies what differs as an `InputReader`: its parser and its padding example,
and, where batches are not plain, its batching (token buckets, masks made per batch). Model
Garden's `InputReader` takes a decoder and a parser per dataset in the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import tensorflow as tf

from models.core.errors import UsageError

READ_BUFFER = 8 * 2**20
_AUTOTUNE = tf.data.AUTOTUNE

Parse = Callable[..., object]
Padding = Callable[[tf.data.Dataset], tf.data.Dataset]
Batching = Callable[[tf.data.Dataset, int], tf.data.Dataset]


def tfrecords(path: tf.Tensor) -> tf.data.Dataset:
    """The serialized records of one TFRecord file."""
    return tf.data.TFRecordDataset(path, buffer_size=READ_BUFFER)


@dataclass(frozen=True)
class InputReader:
    """How one split of a schema is read. `parse` maps a record to an example; with
    `parse_batch`, a batch of that many records to a batch of examples (ragged work such as
    tokenising); with `seeded`, (record, its own stateless seed [2]) to an example (random
    augmentation). `padding` turns the parsed examples into a dataset of one padding example,
    repeated after evaluation's last (static shapes; metrics skip it). `batch` replaces plain
    batches of the per-replica size (drop_remainder) where a schema batches otherwise."""

    parse: Parse
    padding: Padding | None = None
    batch: Batching | None = None
    shuffle_buffer: int = 10000
    cycle_length: int = 16
    cache: bool = False
    seeded: bool = False
    parse_batch: int = 0
    read_file: Callable[[tf.Tensor], tf.data.Dataset] = tfrecords

    def read(
        self,
        files: Sequence[str],
        training: bool,
        global_batch_size: int,
        input_context: tf.distribute.InputContext | None,
        seed: int | None,
    ) -> tf.data.Dataset:
        """Batches of this input pipeline's share of `files`: training endless and shuffled,
        evaluation every example once and then padding; deterministic unless training
        without a seed."""
        batch_size = per_replica_batch(global_batch_size, input_context)
        records = sharded_records(
            list(files), training, input_context, seed, self.cycle_length, self.read_file
        )
        if self.cache:
            records = records.cache()
        if training:
            records = records.repeat().shuffle(self.shuffle_buffer, seed=seed)
        examples = self._parsed(records, seed if training else None)
        if not training and self.padding is not None:
            examples = examples.concatenate(self.padding(examples).repeat())
        batches = (self.batch or _plain_batches)(examples, batch_size)
        options = tf.data.Options()
        options.deterministic = not training or seed is not None
        return batches.prefetch(_AUTOTUNE).with_options(options)

    def _parsed(self, records: tf.data.Dataset, seed: int | None) -> tf.data.Dataset:
        # Plain TensorFlow ops: AutoGraph's conversion of Model Garden's parsers took 10-20 s a
        # process (2026-12-03), each time a pipeline was built.
        parse = tf.autograph.experimental.do_not_convert(self.parse)
        if self.seeded:
            seeds = tf.data.Dataset.random(seed=seed).batch(2)
            records = tf.data.Dataset.zip((records, seeds))
        if not self.parse_batch:
            return records.map(parse, num_parallel_calls=_AUTOTUNE)
        examples = records.batch(self.parse_batch).map(parse, num_parallel_calls=_AUTOTUNE)
        return examples.unbatch().map(_dense, num_parallel_calls=_AUTOTUNE)


def constant_padding(example: object) -> Padding:
    """`InputReader.padding` of one fixed example (zeros, a label no metric counts)."""
    return lambda _: tf.data.Dataset.from_tensors(example)


def blank_like(blank: Callable[..., object]) -> Padding:
    """`InputReader.padding` made from the first real example by `blank` (zeros of the
    parser's own shapes and nests)."""
    return lambda examples: examples.take(1).map(blank)


def _plain_batches(examples: tf.data.Dataset, batch_size: int) -> tf.data.Dataset:
    return examples.batch(batch_size, drop_remainder=True)


def _dense(*parts: object) -> object:
    """An unbatched example (a tuple arrives as its parts): rows of ragged values are typed
    ragged but dense inside."""
    return tf.nest.map_structure(tf.identity, parts[0] if len(parts) == 1 else parts)


def sharded_records(
    files: list[str],
    training: bool,
    input_context: tf.distribute.InputContext | None,
    seed: int | None,
    cycle_length: int = 16,
    read_file: Callable[[tf.Tensor], tf.data.Dataset] = tfrecords,
) -> tf.data.Dataset:
    """Records of this pipeline's shard (by file, or by record if files are few)."""
    pipelines = input_context.num_input_pipelines if input_context else 1
    pipeline = input_context.input_pipeline_id if input_context else 0
    by_record = pipelines > 1 and len(files) < pipelines
    dataset = tf.data.Dataset.from_tensor_slices(files)
    if pipelines > 1 and not by_record:
        dataset = dataset.shard(pipelines, pipeline)
    if training and not by_record:  # Record sharding needs the same order in every pipeline.
        dataset = dataset.shuffle(len(files), seed=seed)
    dataset = dataset.interleave(
        read_file,
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
