"""Inception preprocessing's colour distortion (TF-slim `distort_color`), stateless and per
example, on the shared pipeline's 0..255 float images.

"fast" is slim's fast mode: brightness (delta up to 32/255) then saturation (x0.5-1.5), what
the Inception-v3 and AmoebaNet-D TPU references train with. "full" also changes hue (delta up
to 0.2) and contrast (x0.5-1.5), in one of slim's four orders picked at random for each
example, as the Inception-v4 reference (fast_mode=False) does. The result is clipped to the
valid range once, after all four, as slim clips.
"""

from __future__ import annotations

import tensorflow as tf

COLOR_DISTORTIONS = ("none", "fast", "full")
_FAST_ORDER = (("brightness", "saturation"),)
_FULL_ORDERS = (
    ("brightness", "saturation", "hue", "contrast"),
    ("saturation", "brightness", "contrast", "hue"),
    ("contrast", "hue", "brightness", "saturation"),
    ("hue", "saturation", "contrast", "brightness"),
)


def _operations(seeds: list[tf.Tensor]) -> dict:
    """slim's four random colour changes, on [0, 1] images, each with its own seed."""
    return {
        "brightness": lambda x: tf.image.stateless_random_brightness(x, 32.0 / 255.0, seeds[0]),
        "saturation": lambda x: tf.image.stateless_random_saturation(x, 0.5, 1.5, seeds[1]),
        "hue": lambda x: tf.image.stateless_random_hue(x, 0.2, seeds[2]),
        "contrast": lambda x: tf.image.stateless_random_contrast(x, 0.5, 1.5, seeds[3]),
    }


def distort_color(image: tf.Tensor, mode: str, seed: tf.Tensor) -> tf.Tensor:
    """`image` (float, 0..255) with mode's colour distortion applied; unchanged for "none"."""
    if mode == "none":
        return image
    orders = _FAST_ORDER if mode == "fast" else _FULL_ORDERS
    seeds = tf.unstack(tf.random.experimental.stateless_split(seed, 5))
    operations = _operations(seeds)

    def apply(order: tuple[str, ...]):
        def branch() -> tf.Tensor:
            x = image / 255.0
            for name in order:
                x = operations[name](x)
            return x

        return branch

    pick = tf.random.stateless_uniform([], seeds[4], 0, len(orders), dtype=tf.int32)
    distorted = tf.switch_case(pick, [apply(order) for order in orders])
    return tf.clip_by_value(distorted, 0.0, 1.0) * 255.0
