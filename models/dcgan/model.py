"""DCGAN's generator and discriminator (Radford et al. 2016, "Unsupervised Representation
Learning with Deep Convolutional Generative Adversarial Networks", section 3 and figure 1):
strided transposed convolutions up from a 4x4 projection of z, strided convolutions down,
batch norm everywhere but the generator's output and the discriminator's input, ReLU in the
generator, leaky ReLU (0.2) in the discriminator, tanh output, weights from N(0, 0.02)."""

from __future__ import annotations

import math

import gin
import tensorflow as tf
import tf_keras

from models.core.errors import UsageError
from models.core.registry import register_model
from models.tasks.adversarial import AdversarialPair

SEED_SIZE = 4
KERNEL = 5


def _init() -> tf_keras.initializers.Initializer:
    return tf_keras.initializers.RandomNormal(stddev=0.02)


def _doublings(image_size: int) -> int:
    """Upsamplings from the 4x4 seed to image_size (a power of two, at least 8)."""
    doublings = int(math.log2(max(image_size, 1) / SEED_SIZE))
    if image_size < 2 * SEED_SIZE or SEED_SIZE * 2**doublings != image_size:
        raise UsageError(f"dcgan: image_size={image_size} must be 8, 16, 32, 64, 128, ...")
    return doublings


class Generator(tf_keras.Model):
    """z -> 4x4x(width * 2^(n-1)) -> n transposed convs (halving the width) -> tanh image."""

    def __init__(self, image_size: int, width: int, channels: int, **kwargs):
        super().__init__(**kwargs)
        doublings = _doublings(image_size)
        top = width * 2 ** (doublings - 1)
        self.project = tf_keras.layers.Dense(
            SEED_SIZE * SEED_SIZE * top, use_bias=False, kernel_initializer=_init()
        )
        self.seed_shape = (SEED_SIZE, SEED_SIZE, top)
        self.norms = [tf_keras.layers.BatchNormalization(momentum=0.9, epsilon=1e-5)]
        self.convs = []
        for i in range(doublings):
            last = i == doublings - 1
            self.convs.append(
                tf_keras.layers.Conv2DTranspose(
                    channels if last else top // 2 ** (i + 1),
                    KERNEL,
                    strides=2,
                    padding="same",
                    use_bias=last,
                    kernel_initializer=_init(),
                )
            )
            if not last:
                self.norms.append(tf_keras.layers.BatchNormalization(momentum=0.9, epsilon=1e-5))

    def call(self, inputs: dict[str, tf.Tensor], training: bool = False) -> tf.Tensor:
        x = tf.reshape(self.project(inputs["noise"]), (-1, *self.seed_shape))
        for norm, conv in zip(self.norms, self.convs, strict=False):
            x = conv(tf.nn.relu(norm(x, training=training)))
        return tf.tanh(x)


class Discriminator(tf_keras.Model):
    """image -> n strided convs (doubling the width; no BN on the first) -> one logit."""

    def __init__(self, image_size: int, width: int, **kwargs):
        super().__init__(**kwargs)
        doublings = _doublings(image_size)
        self.convs = [
            tf_keras.layers.Conv2D(
                width * 2**i,
                KERNEL,
                strides=2,
                padding="same",
                use_bias=i == 0,
                kernel_initializer=_init(),
            )
            for i in range(doublings)
        ]
        self.norms = [None] + [
            tf_keras.layers.BatchNormalization(momentum=0.9, epsilon=1e-5)
            for _ in range(doublings - 1)
        ]
        self.flatten = tf_keras.layers.Flatten()
        self.logit = tf_keras.layers.Dense(1, kernel_initializer=_init())

    def call(self, inputs: dict[str, tf.Tensor], training: bool = False) -> tf.Tensor:
        x = inputs["image"]
        for conv, norm in zip(self.convs, self.norms, strict=True):
            x = conv(x)
            if norm is not None:
                x = norm(x, training=training)
            x = tf.nn.leaky_relu(x, 0.2)
        return tf.squeeze(self.logit(self.flatten(x)), axis=-1)


@gin.configurable
def dcgan(
    image_size: int = 32,
    num_classes: int = 0,
    z_dim: int = 100,
    generator_width: int = 64,
    discriminator_width: int = 64,
    channels: int = 3,
) -> AdversarialPair:
    """An unconditional DCGAN pair (`num_classes` is accepted and ignored: DCGAN has no
    labels); widths are the last generator layer's and the first discriminator layer's
    filters (64 in the paper's 64x64 LSUN model)."""
    del num_classes
    generator = Generator(image_size, generator_width, channels, name="generator")
    discriminator = Discriminator(image_size, discriminator_width, name="discriminator")
    pair = AdversarialPair(generator, discriminator, z_dim, 0, image_size, channels, name="dcgan")
    return pair.build_both()


register_model(
    "dcgan_32",
    "dcgan",
    "DCGAN at 32x32 (z 100; 4x4x256 seed, 3 transposed convs; D 64-128-256)",
    task="ImageGenerationTask",
    fixed={"image_size": 32},
)(dcgan)
register_model(
    "dcgan_64",
    "dcgan",
    "DCGAN at 64x64 as the paper's LSUN/ImageNet model (4x4x512 seed, 4 transposed convs)",
    task="ImageGenerationTask",
    fixed={"image_size": 64},
)(dcgan)
