"""Optimisers and learning-rate schedules that recipes pick with gin (Model Garden's first)."""

from __future__ import annotations

from dataclasses import dataclass

import gin
import tensorflow as tf
import tf_keras
from official.modeling.optimization import lamb, lars, lr_schedule

from models.core.errors import UsageError
from models.core.gin_types import check_field_types
from models.core.settings import StepPlan

# Variables neither decayed nor layer-adapted: normalisation parameters (BN; LayerNorm's beta and
# gamma) and biases, as the LARS, LAMB and BERT references exclude them.
_NO_DECAY = ["batch_normalization", "bias", "beta", "gamma"]
# Attribute of a built optimiser: its L2 rate, read by l2_penalty inside the traced step.
L2_RATE = "l2_rate"


@gin.configurable("learning_rate")
def learning_rate(
    plan: StepPlan,
    base_lr: float = 0.1,
    base_batch_size: int | None = 256,
    warmup_steps: int | None = None,
    warmup_epochs: float | None = None,
    warmup_examples: int | None = None,
    decay: str = "cosine",
    boundaries_steps: tuple[int, ...] | None = None,
    boundaries_epochs: tuple[float, ...] | None = None,
    decay_factor: float = 0.1,
    decay_steps: int | None = None,
    decay_epochs: float | None = None,
    poly_power: float = 2.0,
    end_lr: float = 1e-4,
    scaling: str = "linear",
) -> tf_keras.optimizers.schedules.LearningRateSchedule | float:
    """Peak lr = base_lr x global_batch / base_batch_size (linear scaling; `scaling = "sqrt"`:
    x its square root, as the LAMB paper scales Adam-type rates; None keeps base_lr),
    linear warmup (steps, epochs or examples; none: no warmup), then cosine, polynomial, step
    (at boundaries_steps or boundaries_epochs), exponential or inverse-square-root decay.

    cosine/poly/step start after the warmup. exponential is x decay_factor every decay_steps
    or decay_epochs (staircase) counted from step 0, as TF1's exponential_decay in the TPU
    references and Model Garden's `exponential`; the warmup ramps to that schedule's value at
    its end. rsqrt is the Transformer's inverse square root: peak x sqrt(warmup / step) after
    the warmup (Vaswani et al. 2017, Section 5.3, with peak d^-0.5 x warmup^-0.5)."""
    peak, warmup = peak_and_warmup(
        plan, base_lr, base_batch_size, warmup_steps, warmup_epochs, warmup_examples, scaling
    )
    after = max(plan.total_steps - warmup, 1)
    if decay == "cosine":
        schedule = tf_keras.optimizers.schedules.CosineDecay(peak, after)
    elif decay == "poly":
        schedule = tf_keras.optimizers.schedules.PolynomialDecay(peak, after, end_lr, poly_power)
    elif decay == "step":
        bounds = [b - warmup for b in _boundaries(plan, boundaries_steps, boundaries_epochs)]
        values = [peak * decay_factor**i for i in range(len(bounds) + 1)]
        schedule = tf_keras.optimizers.schedules.PiecewiseConstantDecay(bounds, values)
    elif decay == "constant":
        return lr_schedule.LinearWarmup(peak, warmup, 0.0) if warmup > 0 else peak
    elif decay == "rsqrt":
        if warmup <= 0:
            raise UsageError("learning_rate.decay='rsqrt' needs a warmup (its peak's step)")
        schedule = lr_schedule.DirectPowerDecay(peak * warmup**0.5, -0.5)
        return lr_schedule.LinearWarmup(schedule, warmup, 0.0)
    elif decay == "exponential":
        names = ("learning_rate.decay_steps", "learning_rate.decay_epochs", "-")
        every = plan.clock.steps(names, decay_steps, decay_epochs, None)
        if not every:
            raise UsageError("learning_rate.decay='exponential' needs decay_steps or decay_epochs")
        schedule = tf_keras.optimizers.schedules.ExponentialDecay(
            peak, float(every), decay_factor, staircase=True
        )
        return lr_schedule.LinearWarmup(schedule, warmup, 0.0) if warmup > 0 else schedule
    else:
        raise UsageError(
            f"learning_rate.decay='{decay}': use cosine, poly, step, exponential, rsqrt or constant"
        )
    if warmup <= 0:
        return schedule
    return lr_schedule.LinearWarmup(_Offset(schedule, warmup), warmup, 0.0)


def peak_and_warmup(
    plan: StepPlan,
    base_lr: float,
    base_batch_size: int | None,
    warmup_steps: int | None = None,
    warmup_epochs: float | None = None,
    warmup_examples: int | None = None,
    scaling: str = "linear",
) -> tuple[float, int]:
    """The peak rate (base_lr x global batch / base_batch_size, or its square root; None:
    base_lr) and the warmup's length in steps (0 when none is set)."""
    if scaling not in ("linear", "sqrt"):
        raise UsageError(f"learning_rate.scaling='{scaling}': use linear or sqrt")
    ratio = plan.global_batch_size / base_batch_size if base_batch_size else 1.0
    peak = base_lr * (ratio if scaling == "linear" else ratio**0.5)
    names = tuple(f"learning_rate.warmup_{unit}" for unit in ("steps", "epochs", "examples"))
    return peak, plan.clock.steps(names, warmup_steps, warmup_epochs, warmup_examples) or 0


def _boundaries(
    plan: StepPlan, steps: tuple[int, ...] | None, epochs: tuple[float, ...] | None
) -> list[int]:
    """The step decay's boundaries in steps (default: epochs 30, 60, 80 as ResNet's)."""
    if steps is not None and epochs is not None:
        raise UsageError(
            "learning_rate.boundaries_steps and boundaries_epochs are both set: give one"
        )
    if steps is not None:
        return [int(b) for b in steps]
    names = ("-", "learning_rate.boundaries_epochs", "-")
    return [plan.clock.steps(names, None, e, None) for e in (epochs or (30, 60, 80))]


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
    """rate/2 * ||w||^2 over kernels (gradient: rate * w), with the rate fixed when the
    optimiser was built (zero where the optimiser decays weights itself)."""
    rate = getattr(optimizer, L2_RATE, 0.0)
    if not rate:
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
    beta_1: float = 0.9
    beta_2: float = 0.999
    ema_decay: float = 0.0

    def __post_init__(self):
        check_field_types(self, "optimizer")

    def build(self, schedule, weight_decay: float) -> tf_keras.optimizers.Optimizer:
        """sgd (momentum), lars (You et al. 2017), lamb (You et al. 2020), adam, adamw (BERT's
        Adam with decoupled weight decay) or rmsprop; LARS, LAMB and AdamW skip normalisation
        parameters and biases.
        Optimisers that do not decay weights themselves carry `weight_decay` as their L2 rate."""
        if not 0.0 <= self.ema_decay < 1.0:
            raise UsageError(f"optimizer.ema_decay={self.ema_decay}: use 0 (off) or 0 < d < 1")
        optimizer = self._keras_optimizer(schedule, weight_decay)
        decays_itself = isinstance(optimizer, lars.LARS | lamb.LAMB | tf_keras.optimizers.AdamW)
        setattr(optimizer, L2_RATE, 0.0 if decays_itself else float(weight_decay))
        return optimizer

    def _keras_optimizer(self, schedule, weight_decay: float) -> tf_keras.optimizers.Optimizer:
        name, momentum, epsilon = self.name, self.momentum, self.epsilon
        betas = {"beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": epsilon}
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
            return tf_keras.optimizers.Adam(schedule, **betas)
        if name == "adamw":
            adamw = tf_keras.optimizers.AdamW(schedule, weight_decay=weight_decay, **betas)
            adamw.exclude_from_weight_decay(var_names=_NO_DECAY)
            return adamw
        if name == "lamb":
            return lamb.LAMB(
                schedule,
                weight_decay_rate=weight_decay,
                exclude_from_weight_decay=_NO_DECAY,
                exclude_from_layer_adaptation=_NO_DECAY,
                **betas,
            )
        if name == "rmsprop":
            return tf_keras.optimizers.RMSprop(
                schedule, rho=0.9, momentum=momentum, epsilon=epsilon
            )
        raise UsageError(f"optimizer.name='{name}': use sgd, lars, lamb, adam, adamw or rmsprop")


def build_optimizer(plan: StepPlan, scope: str | None = None) -> tf_keras.optimizers.Optimizer:
    """The optimiser and schedule the gin bindings describe, read within gin scope `scope`
    (`scope/optimizer.name`, `scope/learning_rate.base_lr`, ...; unscoped ones apply too)."""
    with gin.config_scope(scope):
        return OptimizerSettings().build(learning_rate(plan), weight_decay_rate())


def build_optimizers(names: list[str], plan: StepPlan) -> dict[str, tf_keras.optimizers.Optimizer]:
    """One optimiser per model name, each read within the gin scope of that name."""
    return {name: build_optimizer(plan, name) for name in names}


def ema_decay(scope: str | None = None) -> float:
    """The gin `optimizer.ema_decay` within `scope` (0 when weights are not averaged)."""
    with gin.config_scope(scope):
        return OptimizerSettings().ema_decay
