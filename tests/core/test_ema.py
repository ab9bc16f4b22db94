"""Weight averages (optimizer.ema_decay): TF1's update rule on a simulated 2-replica slice,
swapping for evaluation, and a CLI run whose eval and export use the averaged weights."""

from __future__ import annotations

import re

import numpy as np
import pytest
import tensorflow as tf
import tf_keras
from zoo_testing import run_model

from models.core.ema import WeightAverage, batch_norm_statistics
from models.core.strategy import build_strategy


def _averaged_dense(strategy, decay: float):
    with strategy.scope():
        model = tf_keras.Sequential([tf_keras.Input((3,)), tf_keras.layers.Dense(2)])
        average = WeightAverage(model, decay)
    return model, average


def _replica_update(strategy, average: WeightAverage, step: int) -> None:
    strategy.run(tf.function(lambda: average.update(tf.constant(step))))


def test_update_follows_tf1_rule_on_every_replica():
    strategy = build_strategy(slice_name="cpu-2")
    model, average = _averaged_dense(strategy, decay=0.9)
    start = [v.numpy() for v in model.trainable_variables]
    with strategy.scope():
        for weight in model.trainable_variables:
            weight.assign_add(tf.ones_like(weight))
    _replica_update(strategy, average, step=0)  # decay min(0.9, 1/10) = 0.1
    _replica_update(strategy, average, step=1000)  # decay 0.9
    expected_first = [w + 0.9 for w in start]
    expected = [0.9 * a + 0.1 * (w + 1) for a, w in zip(expected_first, start, strict=True)]
    for variable, want in zip(average.averages, expected, strict=True):
        for replica_value in variable.values:
            np.testing.assert_allclose(replica_value.numpy(), want, rtol=1e-5, atol=1e-6)


def test_bn_statistics_are_averaged_per_replica_and_swapped_in_as_their_mean():
    # TF1's references average trainable_variables() + moving_average_variables().
    strategy = build_strategy(slice_name="cpu-2")
    with strategy.scope():
        model = tf_keras.Sequential(
            [tf_keras.Input((3,)), tf_keras.layers.Dense(2), tf_keras.layers.BatchNormalization()]
        )
        average = WeightAverage(model, decay=0.9)
    bn = model.layers[-1]
    assert batch_norm_statistics(model) == [bn.moving_mean, bn.moving_variance]
    assert len(average.averages) == len(model.trainable_variables) + 2

    def replica_stats():  # replica r's statistics: r + 1 (BN statistics differ per replica)
        replica = tf.distribute.get_replica_context().replica_id_in_sync_group
        bn.moving_mean.assign(tf.fill([2], tf.cast(replica, tf.float32) + 1.0))

    strategy.run(tf.function(replica_stats))
    _replica_update(strategy, average, step=1000)  # decay 0.9 from the initial 0
    mean_average = average.averages[len(model.trainable_variables)]
    for replica, value in enumerate(mean_average.values):
        np.testing.assert_allclose(value.numpy(), [0.1 * (replica + 1)] * 2, rtol=1e-5)
    average.swap(strategy)
    for value in bn.moving_mean.values:  # every replica evaluates the replicas' mean average
        np.testing.assert_allclose(value.numpy(), [0.15, 0.15], rtol=1e-5)


def test_swap_twice_restores_training_weights():
    strategy = build_strategy(slice_name="cpu-2")
    model, average = _averaged_dense(strategy, decay=0.5)
    with strategy.scope():
        for weight in model.trainable_variables:
            weight.assign_add(tf.ones_like(weight))
    trained = [v.numpy() for v in model.trainable_variables]
    averaged = [v.numpy() for v in average.averages]
    average.swap(strategy)
    for weight, want in zip(model.trainable_variables, averaged, strict=True):
        for replica_value in weight.values:  # every replica evaluates the average
            np.testing.assert_allclose(replica_value.numpy(), want)
    average.swap(strategy)
    for weight, want in zip(model.trainable_variables, trained, strict=True):
        np.testing.assert_allclose(weight.numpy(), want)


def _metrics(stdout: str) -> str:
    """'top_1_accuracy=..., top_5_accuracy=...' of the command's final line."""
    return re.findall(r"top_1_accuracy=[\d.]+, top_5_accuracy=[\d.]+", stdout)[-1]


def _head_kernels(model_dir) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The logits layer's kernel: raw and averaged in the checkpoint, and as exported."""
    checkpoint = tf.train.latest_checkpoint(str(model_dir))
    value = "/.ATTRIBUTES/VARIABLE_VALUE"
    raw = tf.train.load_variable(checkpoint, f"model/layer_with_weights-1/kernel{value}")
    heads = [  # the only average shaped (features, classes)
        n
        for n, shape in tf.train.list_variables(checkpoint)
        if n.startswith("average_model/") and shape == list(raw.shape)
    ]
    assert len(heads) == 1, heads
    export = next((model_dir / "export").iterdir()) / "variables" / "variables"
    return (
        raw,
        tf.train.load_variable(checkpoint, heads[0]),
        tf.train.load_variable(str(export), f"models/model/layer_with_weights-1/kernel{value}"),
    )


@pytest.mark.slow
def test_eval_and_export_use_the_averaged_weights(tmp_path, cli_env):
    ema = "--gin_param=optimizer.ema_decay = 0.99"
    trained = run_model("resnet", tmp_path, ema, "--gin_param=train.epochs = 1", env=cli_env)
    assert trained.returncode == 0, trained.stderr[-3000:]
    names = [name for name, _ in tf.train.list_variables(str(tmp_path))]
    assert any(name.startswith("average_model/") for name in names)
    with_average = run_model("resnet", tmp_path, ema, "--mode=eval", env=cli_env)
    raw = run_model("resnet", tmp_path, "--mode=eval", env=cli_env)
    assert with_average.returncode == raw.returncode == 0, raw.stderr[-3000:]
    # The run's own eval (averaged) is what --mode=eval reports with the same recipe...
    assert _metrics(with_average.stdout) == _metrics(trained.stdout)
    # ...and differs from the raw weights after one epoch of a fast-moving model.
    assert _metrics(raw.stdout) != _metrics(trained.stdout)
    exported = run_model("resnet", tmp_path, ema, "--mode=export", env=cli_env)
    assert exported.returncode == 0, exported.stderr[-3000:]
    raw_head, average_head, exported_head = _head_kernels(tmp_path)
    np.testing.assert_array_equal(exported_head, average_head)
    assert not np.allclose(raw_head, average_head)
