"""Inception preprocessing's colour distortion, stateless and per example, on the shared
pipeline's 0..255 float images.

- "brightness_chroma": what the Cloud TPU references train with (tensorflow/tpu
  `inception_preprocessing.distort_color_fast`, used by Inception-v3/v4, AmoebaNet-D and
  MobileNet v1 because their flag `use_fast_color_distort` defaults to True): one brightness
  delta (up to 32/255) for every channel plus a chroma shift, Cb and Cr factors up to 0.1
  turned into RGB offsets with the YCbCr->RGB coefficients.
- "slim_fast": TF-slim's `distort_color` in fast mode, brightness (up to 32/255) then
  saturation (x0.5-1.5).
- "slim_full": slim's full mode, brightness, saturation, hue (up to 0.2) and contrast
  (x0.5-1.5) in one of its four orders, picked at random for each example.
Each clips to the valid range once, at the end, as the references do.
"""

from __future__ import annotations

import tensorflow as tf

COLOR_DISTORTIONS = ("none", "brightness_chroma", "slim_fast", "slim_full")
_SLIM_ORDERS = {
    "slim_fast": (("brightness", "saturation"),),
    "slim_full": (
        ("brightness", "saturation", "hue", "contrast"),
        ("saturation", "brightness", "contrast", "hue"),
        ("contrast", "hue", "brightness", "saturation"),
        ("hue", "saturation", "contrast", "brightness"),
    ),
}
# RGB offset per unit of (Cb, Cr): the YCbCr->RGB matrix's chroma columns.
_CHROMA_TO_RGB = ((0.0, 1.402), (-0.344136, -0.714136), (1.772, 0.0))


def _brightness_chroma(x: tf.Tensor, seed: tf.Tensor) -> tf.Tensor:
    brightness, chroma = tf.unstack(tf.random.experimental.stateless_split(seed, 2))
    delta = tf.random.stateless_uniform([], brightness, -32.0 / 255.0, 32.0 / 255.0)
    cb_cr = tf.random.stateless_uniform([2], chroma, -0.1, 0.1)
    return x + delta + tf.linalg.matvec(tf.constant(_CHROMA_TO_RGB), cb_cr)


def _slim(x: tf.Tensor, orders: tuple, seed: tf.Tensor) -> tf.Tensor:
    seeds = tf.unstack(tf.random.experimental.stateless_split(seed, 5))
    operations = {
        "brightness": lambda y: tf.image.stateless_random_brightness(y, 32.0 / 255.0, seeds[0]),
        "saturation": lambda y: tf.image.stateless_random_saturation(y, 0.5, 1.5, seeds[1]),
        "hue": lambda y: tf.image.stateless_random_hue(y, 0.2, seeds[2]),
        "contrast": lambda y: tf.image.stateless_random_contrast(y, 0.5, 1.5, seeds[3]),
    }

    def branch(order: tuple[str, ...]):
        def apply() -> tf.Tensor:
            y = x
            for name in order:
                y = operations[name](y)
            return y

        return apply

    pick = tf.random.stateless_uniform([], seeds[4], 0, len(orders), dtype=tf.int32)
    return tf.switch_case(pick, [branch(order) for order in orders])


def distort_color(image: tf.Tensor, mode: str, seed: tf.Tensor) -> tf.Tensor:
    """`image` (float, 0..255) with mode's colour distortion applied; unchanged for "none"."""
    if mode == "none":
        return image
    x = image / 255.0
    if mode == "brightness_chroma":
        x = _brightness_chroma(x, seed)
    else:
        x = _slim(x, _SLIM_ORDERS[mode], seed)
    return tf.clip_by_value(x, 0.0, 1.0) * 255.0
