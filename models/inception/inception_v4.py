"""Inception-v4 (Szegedy et al. 2016, arXiv 1602.07261, figures 3-9) from the family's unit.

Stem, 4 x Inception-A, Reduction-A (k=192, l=224, m=256, n=384), 7 x Inception-B,
Reduction-B, 3 x Inception-C; 299x299x3 in, 8x8x1536 out. Branch widths and the order of each
factorised 1xn/nx1 pair follow the TF-slim / Cloud TPU reference model (inception_v4_model.py);
a pair's order changes neither parameters nor FLOPs. Block outputs are named after that
reference's end points (mixed_5b, ...). The family builder adds pool, dropout and logits.
"""

from __future__ import annotations

import tensorflow as tf
import tf_keras

from models.inception.model import conv_bn

layers = tf_keras.layers

# Each valid 3x3 (stride 1 or 2) must see >= 3 pixels: 75 -> 37 -> 35 -> 17 -> 15 -> 7 -> 3 -> 1
# through the stem and both reduction blocks, as for InceptionV3.
MIN_IMAGE_SIZE = 75


def _valid(x: tf.Tensor, filters: int, kernel=(3, 3), strides: int = 1) -> tf.Tensor:
    """The family unit without padding (the paper's "V" convolutions)."""
    return conv_bn(x, filters, kernel, strides=strides, padding="valid")


def _max_pool(x: tf.Tensor) -> tf.Tensor:
    return layers.MaxPooling2D(3, strides=2, padding="valid")(x)


def _avg_pool_1x1(x: tf.Tensor, filters: int) -> tf.Tensor:
    """3x3 average pool (stride 1, same) then a 1x1 unit: every block's pooling branch."""
    return conv_bn(layers.AveragePooling2D(3, strides=1, padding="same")(x), filters, (1, 1))


def _chain(x: tf.Tensor, units: list[tuple[int, tuple[int, int]]]) -> tf.Tensor:
    """Same-padded units one after another, each (filters, kernel)."""
    for filters, kernel in units:
        x = conv_bn(x, filters, kernel)
    return x


def stem(x: tf.Tensor) -> tf.Tensor:
    """Figure 3: 299x299x3 -> 35x35x384 (three valid stride-2 steps, two valid 3x3)."""
    x = _valid(x, 32, strides=2)
    x = _valid(x, 32)
    x = conv_bn(x, 64, (3, 3))
    x = layers.Concatenate(name="mixed_3a")([_max_pool(x), _valid(x, 96, strides=2)])
    a = _valid(conv_bn(x, 64, (1, 1)), 96)
    b = _valid(_chain(x, [(64, (1, 1)), (64, (1, 7)), (64, (7, 1))]), 96)
    x = layers.Concatenate(name="mixed_4a")([a, b])
    return layers.Concatenate(name="mixed_5a")([_valid(x, 192, strides=2), _max_pool(x)])


def inception_a(x: tf.Tensor, name: str) -> tf.Tensor:
    """Figure 4, 35x35: 1x1 | 1x1-3x3 | 1x1-3x3-3x3 | avgpool-1x1 -> 384 channels."""
    b1 = conv_bn(x, 96, (1, 1))
    b3 = _chain(x, [(64, (1, 1)), (96, (3, 3))])
    bd = _chain(x, [(64, (1, 1)), (96, (3, 3)), (96, (3, 3))])
    return layers.Concatenate(name=name)([b1, b3, bd, _avg_pool_1x1(x, 96)])


def reduction_a(
    x: tf.Tensor,
    k: int = 192,
    l: int = 224,  # noqa: E741 - the paper's k, l, m, n
    m: int = 256,
    n: int = 384,
) -> tf.Tensor:
    """Figure 7, 35x35 -> 17x17: 3x3/2 (n) | 1x1 (k)-3x3 (l)-3x3/2 (m) | maxpool/2."""
    b3 = _valid(x, n, strides=2)
    bd = _valid(_chain(x, [(k, (1, 1)), (l, (3, 3))]), m, strides=2)
    return layers.Concatenate(name="mixed_6a")([b3, bd, _max_pool(x)])


def inception_b(x: tf.Tensor, name: str) -> tf.Tensor:
    """Figure 5, 17x17: 1x1 | 1x1-1x7-7x1 | 1x1-(7x1-1x7)x2 | avgpool-1x1 -> 1024 channels."""
    b1 = conv_bn(x, 384, (1, 1))
    b7 = _chain(x, [(192, (1, 1)), (224, (1, 7)), (256, (7, 1))])
    bd = _chain(x, [(192, (1, 1)), (192, (7, 1)), (224, (1, 7)), (224, (7, 1)), (256, (1, 7))])
    return layers.Concatenate(name=name)([b1, b7, bd, _avg_pool_1x1(x, 128)])


def reduction_b(x: tf.Tensor) -> tf.Tensor:
    """Figure 8, 17x17 -> 8x8: 1x1-3x3/2 | 1x1-1x7-7x1-3x3/2 | maxpool/2 -> 1536 channels."""
    b3 = _valid(conv_bn(x, 192, (1, 1)), 192, strides=2)
    b7 = _valid(_chain(x, [(256, (1, 1)), (256, (1, 7)), (320, (7, 1))]), 320, strides=2)
    return layers.Concatenate(name="mixed_7a")([b3, b7, _max_pool(x)])


def _split_1x3_3x1(x: tf.Tensor, filters: int) -> list[tf.Tensor]:
    """Inception-C's fork: a 1x3 and a 3x1 unit side by side on the same input."""
    return [conv_bn(x, filters, (1, 3)), conv_bn(x, filters, (3, 1))]


def inception_c(x: tf.Tensor, name: str) -> tf.Tensor:
    """Figure 6, 8x8: 1x1 | 1x1-(1x3|3x1) | 1x1-3x1-1x3-(1x3|3x1) | avgpool-1x1 -> 1536."""
    b1 = conv_bn(x, 256, (1, 1))
    b3 = _split_1x3_3x1(conv_bn(x, 384, (1, 1)), 256)
    bd = _split_1x3_3x1(_chain(x, [(384, (1, 1)), (448, (3, 1)), (512, (1, 3))]), 256)
    return layers.Concatenate(name=name)([b1, *b3, *bd, _avg_pool_1x1(x, 256)])


def inception_v4_features(inputs: tf.Tensor) -> tf.Tensor:
    """Figure 9 up to the final average pool: the 8x8x1536 map (at 299x299)."""
    x = stem(inputs)
    for suffix in "bcde":
        x = inception_a(x, f"mixed_5{suffix}")
    x = reduction_a(x)
    for suffix in "bcdefgh":
        x = inception_b(x, f"mixed_6{suffix}")
    x = reduction_b(x)
    for suffix in "bcd":
        x = inception_c(x, f"mixed_7{suffix}")
    return x
