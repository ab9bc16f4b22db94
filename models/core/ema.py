"""Exponential moving average of a model's trainable weights, swapped in for eval and export.

Model Garden's `ExponentialMovingAverage` wraps legacy Keras optimisers only; this one works
beside any optimiser. Each replica updates its own copy (ON_READ variables, no all-reduce:
the weights it averages are already identical on every replica); reads and checkpoints take
the first replica's copy.
"""

from __future__ import annotations

import tensorflow as tf
import tf_keras

from models.core.errors import UsageError


class WeightAverage:
    """average <- d * average + (1 - d) * weight after every step, d = min(decay, (1+n)/(10+n))
    with n the step count, as TF1's ExponentialMovingAverage(decay, num_updates=global_step).
    Checkpoint `averages` (the model's own weights stay under the model's path)."""

    def __init__(self, model: tf_keras.Model, decay: float):
        if not model.trainable_variables:
            raise UsageError(f"{model.name}: moving average needs a built model with weights")
        self.decay = decay
        self._weights = list(model.trainable_variables)
        self.averages = [
            tf.Variable(
                w.read_value(),
                trainable=False,
                name=w.name.split(":")[0].replace("/", "_") + "_average",
                synchronization=tf.VariableSynchronization.ON_READ,
                aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA,
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

    @tf.function
    def _swap(self) -> None:
        for average, weight in zip(self.averages, self._weights, strict=True):
            held = tf.identity(weight.read_value())
            weight.assign(tf.identity(average.read_value()))
            average.assign(held)


def build_averages(models: dict, optimized: list[str], decay: float) -> dict[str, WeightAverage]:
    """A WeightAverage for each optimised model when decay > 0, else none."""
    if not decay:
        return {}
    return {name: WeightAverage(models[name], decay) for name in optimized}
