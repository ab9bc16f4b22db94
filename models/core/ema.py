"""Exponential moving average of a model's weights, swapped in for eval and export.

Averaged, as the TF1 TPU references average `trainable_variables() +
moving_average_variables()`: the trainable weights and the BN moving statistics. Model
Garden's `ExponentialMovingAverage` wraps legacy Keras optimisers only; this one works beside
any optimiser. Each replica updates its own copy (ON_READ variables, no all-reduce). Trainable
weights are identical on every replica, so reads and checkpoints take the first replica's
average; BN statistics differ per replica, so their averages read (and swap in) as the mean
over replicas, as Keras reads the statistics themselves.
"""

from __future__ import annotations

import tensorflow as tf
import tf_keras

from models.core.errors import UsageError


def batch_norm_statistics(model: tf_keras.Model) -> list[tf.Variable]:
    """The moving means and variances of every batch-norm layer in `model`, once each."""
    stats = {
        id(v): v
        for layer in model.submodules
        if hasattr(layer, "moving_mean") and hasattr(layer, "moving_variance")
        for v in (layer.moving_mean, layer.moving_variance)
    }
    return [v for v in model.non_trainable_variables if id(v) in stats]


class WeightAverage:
    """average <- d * average + (1 - d) * weight after every step, d = min(decay, (1+n)/(10+n))
    with n the step count, as TF1's ExponentialMovingAverage(decay, num_updates=global_step),
    for the trainable weights and the BN statistics. Checkpoint `averages` (the model's own
    weights stay under the model's path)."""

    def __init__(self, model: tf_keras.Model, decay: float):
        if not model.trainable_variables:
            raise UsageError(f"{model.name}: moving average needs a built model with weights")
        self.decay = decay
        stats = batch_norm_statistics(model)
        self._weights = list(model.trainable_variables) + stats
        stat_ids = {id(v) for v in stats}
        first, mean = tf.VariableAggregation.ONLY_FIRST_REPLICA, tf.VariableAggregation.MEAN
        self.averages = [
            tf.Variable(
                w.read_value(),
                trainable=False,
                name=w.name.split(":")[0].replace("/", "_") + "_average",
                synchronization=tf.VariableSynchronization.ON_READ,
                aggregation=mean if id(w) in stat_ids else first,
            )
            for w in self._weights
        ]

    def update(self, step: tf.Tensor) -> None:
        """One averaging step, in replica context right after the optimiser's update."""
        n = tf.cast(step, tf.float32)
        decay = tf.minimum(self.decay, (1.0 + n) / (10.0 + n))
        for average, weight in zip(self.averages, self._weights, strict=True):
            value = tf.cast(weight, average.dtype)
            average.assign(decay * average + (1.0 - decay) * value)

    def swap(self, strategy: tf.distribute.Strategy) -> None:
        """Exchanges weights and averages (twice restores the training weights)."""
        with strategy.scope():
            self._swap()

    @tf.function(autograph=False)  # a Python loop over the variables: nothing to convert
    def _swap(self) -> None:
        for average, weight in zip(self.averages, self._weights, strict=True):
            held = tf.identity(weight.read_value())
            weight.assign(tf.identity(average.read_value()))
            average.assign(held)


def build_averages(models: dict, decays: dict[str, float]) -> dict[str, WeightAverage]:
    """A WeightAverage for each model whose decay (its `optimizer.ema_decay`) is > 0."""
    return {name: WeightAverage(models[name], decay) for name, decay in decays.items() if decay}
