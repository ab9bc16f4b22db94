"""The one input reader (models/data/reader.py): what every schema's pipeline relies on -
sharding across input pipelines, evaluation padding, seeded order, batched parsing."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from models.data.reader import InputReader, constant_padding, sharded_records

SCHEMA = {"value": tf.io.FixedLenFeature([], tf.int64)}


def _parse(record: tf.Tensor) -> tf.Tensor:
    return tf.io.parse_single_example(record, SCHEMA)["value"]


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> list[str]:
    """Three shards holding the values 0..29, ten each, in order."""
    folder = tmp_path_factory.mktemp("reader")
    paths = []
    for shard in range(3):
        path = str(folder / f"train-{shard:05d}-of-00003")
        with tf.io.TFRecordWriter(path) as writer:
            for value in range(shard * 10, shard * 10 + 10):
                feature = tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))
                example = tf.train.Example(features=tf.train.Features(feature={"value": feature}))
                writer.write(example.SerializeToString())
        paths.append(path)
    return paths


def _context(pipelines: int, pipeline: int) -> tf.distribute.InputContext:
    return tf.distribute.InputContext(pipelines, pipeline, num_replicas_in_sync=pipelines)


def _evaluation_order(shards: list[str]) -> list[int]:
    return [int(_parse(record)) for record in sharded_records(shards, False, None, None)]


def test_evaluation_reads_every_record_once_then_pads_whole_batches(shards):
    reader = InputReader(parse=_parse, padding=constant_padding(tf.constant(-1, tf.int64)))
    batches = list(reader.read(shards, False, 8, None, None).take(5).as_numpy_iterator())
    values = np.concatenate(batches)
    assert [len(batch) for batch in batches] == [8] * 5
    assert values[:30].tolist() == _evaluation_order(shards)  # the files interleaved, in order
    assert sorted(values[:30].tolist()) == list(range(30))
    assert set(values[30:].tolist()) == {-1}


def test_training_is_endless_shuffled_and_the_same_for_a_seed(shards):
    reader = InputReader(parse=_parse, shuffle_buffer=30)
    first = np.concatenate(list(reader.read(shards, True, 10, None, 7).take(9)))
    again = np.concatenate(list(reader.read(shards, True, 10, None, 7).take(9)))
    other = np.concatenate(list(reader.read(shards, True, 10, None, 8).take(9)))
    assert first.tolist() == again.tolist() != other.tolist()
    assert len(first) == 90 and set(first.tolist()) == set(range(30))  # past one epoch
    assert first[:30].tolist() != _evaluation_order(shards)


@pytest.mark.parametrize("pipelines", [2, 4], ids=["by-file", "by-record"])
def test_input_pipelines_read_disjoint_shares_of_every_record(shards, pipelines):
    """Three files: two pipelines share them out by file, four (more than the files) by
    record, in the same order in every pipeline."""
    shares = [
        [int(_parse(record)) for record in sharded_records(shards, True, _context(pipelines, i), 5)]
        for i in range(pipelines)
    ]
    assert sorted(value for share in shares for value in share) == list(range(30))
    assert all(shares), "a pipeline read nothing"


def test_batched_parsing_gives_one_dense_example_at_a_time(shards):
    """parse_batch: a batch of records parsed together (ragged), then unbatched examples."""

    def ragged(records: tf.Tensor) -> tf.RaggedTensor:
        values = tf.io.parse_example(records, SCHEMA)["value"]
        return tf.ragged.range(values % 3 + 1)

    reader = InputReader(
        parse=ragged,
        parse_batch=4,
        batch=lambda examples, size: examples.padded_batch(size, [3], drop_remainder=True),
    )
    batch = next(iter(reader.read(shards, False, 5, None, None)))
    lengths = [value % 3 + 1 for value in _evaluation_order(shards)[:5]]
    assert batch.numpy().tolist() == [[*range(n), *[0] * (3 - n)] for n in lengths]


def test_seeded_parsing_gives_each_example_its_own_seed(shards):
    reader = InputReader(parse=lambda record, seed: seed, seeded=True, shuffle_buffer=1)
    seeds = next(iter(reader.read(shards, True, 16, None, 3))).numpy()
    assert seeds.shape == (16, 2)
    assert len({tuple(seed) for seed in seeds}) == 16
