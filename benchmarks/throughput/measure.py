"""Measuring tools: FLOPs counter, matmul peak, timed loops and rates (model_stats uses the
FLOPs counter too)."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator

import tensorflow as tf
import tf_keras

from models.core.precision import DTYPES

FLOPS_METHOD = (
    "tf.compat.v1.profiler float_ops of the forward graph (training=False, batch 1) x 3 "
    "for forward + backward"
)


def forward_flops(model: tf_keras.Model, example: list[int] | dict[str, tf.TensorSpec]) -> int:
    """Float ops of one forward pass on one example, as TensorFlow's profiler counts them;
    `example` is the shape of the model's one float input, or the specs of a batch of one
    (a text model's token ids)."""

    @tf.function
    def forward(inputs):
        return model(inputs, training=False)

    spec = example if isinstance(example, dict) else tf.TensorSpec([1, *example], tf.float32)
    graph = forward.get_concrete_function(spec).graph
    builder = tf.compat.v1.profiler.ProfileOptionBuilder
    options = builder(builder.float_operation()).with_empty_output().build()
    return int(tf.compat.v1.profiler.profile(graph=graph, options=options).total_float_ops)


def training_flops_per_example(
    model: tf_keras.Model, example: list[int] | dict[str, tf.TensorSpec]
) -> int:
    """Model FLOPs of one training example: 3 x forward (backward is about 2 x forward)."""
    return 3 * forward_flops(model, example)


def _time_matmuls(matmul, a: tf.Tensor, b: tf.Tensor, repeats: int) -> float:
    """Seconds for `repeats` matmuls, synchronised by reading one result value."""
    start = time.perf_counter()
    for _ in range(repeats):
        product = matmul(a, b)
    float(product[0, 0])
    return time.perf_counter() - start


def matmul_peak(precision: str, size: int = 4096, seconds: float = 1.0) -> dict:
    """The device's measured peak: FLOP/s of a size x size matmul in the compute dtype."""
    dtype = DTYPES[precision]
    a = tf.cast(tf.random.stateless_normal([size, size], seed=[1, 2]), dtype)
    b = tf.cast(tf.random.stateless_normal([size, size], seed=[3, 4]), dtype)
    matmul = tf.function(tf.matmul)
    _time_matmuls(matmul, a, b, 1)  # warm-up: trace, allocate, pick kernels
    single = _time_matmuls(matmul, a, b, 1)
    repeats = max(2, math.ceil(seconds / max(single, 1e-6)))
    elapsed = _time_matmuls(matmul, a, b, repeats)
    return {
        "flops_per_s": 2.0 * size**3 * repeats / elapsed,
        "method": f"{size}x{size} {dtype.name} matmul, {repeats} repeats after warm-up",
    }


def time_orbit_trainer(trainer, warmup_steps: int, steps: int) -> float:
    """Seconds of `steps` orbit train steps after `warmup_steps` (tracing happens in warm-up)."""
    trainer.train(tf.constant(warmup_steps, tf.int32))
    int(trainer.global_step.numpy())
    start = time.perf_counter()
    trainer.train(tf.constant(steps, tf.int32))
    int(trainer.global_step.numpy())
    return time.perf_counter() - start


def time_batches(batches: Iterator, warmup: int, count: int) -> float:
    """Seconds to pull `count` batches from an iterator after `warmup` batches."""
    for _ in range(warmup):
        next(batches)
    start = time.perf_counter()
    for _ in range(count):
        images, _ = next(batches)
    float(tf.reduce_sum(tf.cast(images[0, 0, 0], tf.float32)))
    return time.perf_counter() - start


def rates(seconds: float, steps: int, batch: int) -> dict:
    """examples/s and ms per step of `steps` steps of `batch` examples."""
    seconds = max(seconds, 1e-9)
    return {"examples_per_s": steps * batch / seconds, "ms_per_step": 1000.0 * seconds / steps}


def class_name(instance: object) -> str:
    """Module-qualified class name, e.g. tf_keras.src.optimizers.sgd.SGD."""
    return f"{type(instance).__module__}.{type(instance).__name__}"
