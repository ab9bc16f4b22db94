"""Optimisers and learning-rate schedules that recipes pick with gin (Model Garden's first)."""

from __future__ import annotations

from dataclasses import dataclass

import gin
import tensorflow as tf
import tf_keras
from official.modeling.optimization import lars, lr_schedule

from models.core.errors import UsageError

_NO_DECAY = ["batch_normalization", "bias", "beta", "gamma"]


@gin.configurable("learning_rate")
def learning_rate(
    steps_per_epoch: int,
    total_steps: int,
    global_batch_size: int,
    base_lr: float = 0.1,
    base_batch_size: int | None = 256,
    warmup_epochs: float = 5.0,
    decay: str = "cosine",
    boundaries_epochs: tuple[float, ...] = (30, 60, 80),
    decay_factor: float = 0.1,
    decay_epochs: float = 2.4,
    poly_power: float = 2.0,
    end_lr: float = 1e-4,
) -> tf_keras.optimizers.schedules.LearningRateSchedule | float:
    """Peak lr = base_lr x global_batch / base_batch_size (linear scaling; None keeps base_lr),
    linear warmup, then cosine, polynomial, step or exponential decay.

    cosine/poly/step start after the warmup. exponential is x decay_factor every decay_epochs
    (staircase) counted from step 0, as TF1's exponential_decay in the TPU references and
    Model Garden's `exponential`; the warmup ramps to that schedule's value at its end."""
    peak = base_lr * (global_batch_size / base_batch_size if base_batch_size else 1.0)
    warmup = int(round(warmup_epochs * steps_per_epoch))
    after = max(total_steps - warmup, 1)
    if decay == "cosine":
        schedule = tf_keras.optimizers.schedules.CosineDecay(peak, after)
    elif decay == "poly":
        schedule = tf_keras.optimizers.schedules.PolynomialDecay(peak, after, end_lr, poly_power)
    elif decay == "step":
        bounds = [int(e * steps_per_epoch) - warmup for e in boundaries_epochs]
        values = [peak * decay_factor**i for i in range(len(bounds) + 1)]
        schedule = tf_keras.optimizers.schedules.PiecewiseConstantDecay(bounds, values)
    elif decay == "constant":
        return lr_schedule.LinearWarmup(peak, warmup, 0.0) if warmup > 0 else peak
    elif decay == "exponential":
        schedule = tf_keras.optimizers.schedules.ExponentialDecay(
            peak, max(decay_epochs * steps_per_epoch, 1.0), decay_factor, staircase=True
        )
        return lr_schedule.LinearWarmup(schedule, warmup, 0.0) if warmup > 0 else schedule
    else:
        raise UsageError(
            f"learning_rate.decay='{decay}': use cosine, poly, step, exponential or constant"
        )
    if warmup <= 0:
        return schedule
    return lr_schedule.LinearWarmup(_Offset(schedule, warmup), warmup, 0.0)


class _Offset(tf_keras.optimizers.schedules.LearningRateSchedule):
    """Starts a decay schedule after the warmup steps."""

    def __init__(self, schedule, offset: int):
        self._schedule, self._offset = schedule, offset

    def __call__(self, step):
        return self._schedule(tf.maximum(step - self._offset, 0))

    def get_config(self):
        return {"offset": self._offset}


@gin.configurable("weight_decay")
def weight_decay_rate(rate: float = 0.0) -> float:
    """The recipe's weight decay; LARS/AdamW apply it themselves, others through l2_penalty."""
    return rate


def _decays(variable: tf.Variable) -> bool:
    return not any(part in variable.name for part in _NO_DECAY)


def l2_penalty(optimizer: tf_keras.optimizers.Optimizer, variables: list[tf.Variable]) -> tf.Tensor:
    """rate/2 * ||w||^2 over kernels (gradient: rate * w), zero where the optimiser decays."""
    rate = weight_decay_rate()
    if not rate or isinstance(optimizer, lars.LARS | tf_keras.optimizers.AdamW):
        return tf.constant(0.0)
    return rate * tf.add_n([tf.nn.l2_loss(tf.cast(v, tf.float32)) for v in variables if _decays(v)])


@gin.configurable("optimizer")
@dataclass
class OptimizerSettings:
    """The recipe's optimiser and whether to keep an exponential moving average of weights.

    ema_decay > 0 evaluates and exports the moving average of the trainable weights (decay
    min(ema_decay, (1 + step) / (10 + step)), as TF1's ExponentialMovingAverage with
    num_updates in the TPU references); 0 uses the raw weights."""

    name: str = "sgd"
    momentum: float = 0.9
    nesterov: bool = False
    lars_eeta: float = 0.001
    epsilon: float = 1e-7
    ema_decay: float = 0.0

    def build(self, schedule) -> tf_keras.optimizers.Optimizer:
        """sgd (momentum), lars (You et al. 2017; skips BN and bias), adam, adamw or rmsprop."""
        weight_decay = weight_decay_rate()
        name, momentum, epsilon = self.name, self.momentum, self.epsilon
        if not 0.0 <= self.ema_decay < 1.0:
            raise UsageError(f"optimizer.ema_decay={self.ema_decay}: use 0 (off) or 0 < d < 1")
        if name == "sgd":
            return tf_keras.optimizers.SGD(schedule, momentum=momentum, nesterov=self.nesterov)
        if name == "lars":
            return lars.LARS(
                schedule,
                momentum=momentum,
                weight_decay_rate=weight_decay,
                eeta=self.lars_eeta,
                exclude_from_weight_decay=_NO_DECAY,
                exclude_from_layer_adaptation=_NO_DECAY,
            )
        if name == "adam":
            return tf_keras.optimizers.Adam(schedule, epsilon=epsilon)
        if name == "adamw":
            return tf_keras.optimizers.AdamW(schedule, weight_decay=weight_decay, epsilon=epsilon)
        if name == "rmsprop":
            return tf_keras.optimizers.RMSprop(
                schedule, rho=0.9, momentum=momentum, epsilon=epsilon
            )
        raise UsageError(f"optimizer.name='{name}': use sgd, lars, adam, adamw or rmsprop")


def build_optimizer(
    schedule: tf_keras.optimizers.schedules.LearningRateSchedule | float,
) -> tf_keras.optimizers.Optimizer:
    """The optimiser the gin `optimizer.*` bindings describe, on `schedule`."""
    return OptimizerSettings().build(schedule)


def ema_decay() -> float:
    """The gin `optimizer.ema_decay` (0 when weights are not averaged)."""
    return OptimizerSettings().ema_decay
