"""Optimisers and learning-rate schedules that recipes pick with gin (Model Garden's first)."""

from __future__ import annotations

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
    poly_power: float = 2.0,
    end_lr: float = 1e-4,
) -> tf_keras.optimizers.schedules.LearningRateSchedule | float:
    """Peak lr = base_lr x global_batch / base_batch_size (linear scaling; None keeps base_lr),
    linear warmup, then cosine, polynomial or step decay."""
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
    else:
        raise UsageError(f"learning_rate.decay='{decay}': use cosine, poly, step or constant")
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
def build_optimizer(
    schedule: tf_keras.optimizers.schedules.LearningRateSchedule,
    name: str = "sgd",
    momentum: float = 0.9,
    nesterov: bool = False,
    lars_eeta: float = 0.001,
    epsilon: float = 1e-7,
) -> tf_keras.optimizers.Optimizer:
    """sgd (momentum), lars (You et al. 2017; skips BN and bias), adam, adamw or rmsprop."""
    weight_decay = weight_decay_rate()
    if name == "sgd":
        return tf_keras.optimizers.SGD(schedule, momentum=momentum, nesterov=nesterov)
    if name == "lars":
        return lars.LARS(
            schedule,
            momentum=momentum,
            weight_decay_rate=weight_decay,
            eeta=lars_eeta,
            exclude_from_weight_decay=_NO_DECAY,
            exclude_from_layer_adaptation=_NO_DECAY,
        )
    if name == "adam":
        return tf_keras.optimizers.Adam(schedule, epsilon=epsilon)
    if name == "adamw":
        return tf_keras.optimizers.AdamW(schedule, weight_decay=weight_decay, epsilon=epsilon)
    if name == "rmsprop":
        return tf_keras.optimizers.RMSprop(schedule, rho=0.9, momentum=momentum, epsilon=epsilon)
    raise UsageError(f"optimizer.name='{name}': use sgd, lars, adam, adamw or rmsprop")
