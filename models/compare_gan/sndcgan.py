"""SNDCGAN (Miyato et al. 2018, table 3; compare_gan's sndcgan, Kurach et al. 2019's DCGAN):
the generator maps z to (size/8)^2 x 8 width (512 at width 64), BN and ReLU, three 4x4
stride-2 transposed convs (4, 2, 1 width) each with BN and ReLU, a 3x3 transposed conv and
tanh; the discriminator has seven convs (3x3 of width, then 4x4 stride 2 and 3x3 at 2, 4 and
8 width) with leaky ReLU 0.1, then a dense logit on the flattened features (plus the class
projection when conditional).

compare_gan's SNDCGAN discriminator takes spectral norm or none; batch and layer norm (the
study's other discriminator normalisations) go here after every conv but the first, as in
DCGAN's discriminator."""

from __future__ import annotations

import tensorflow as tf
import tf_keras

from models.compare_gan import layers
from models.compare_gan.layers import GanSpec
from models.core.errors import UsageError

STRIDE = 8  # three stride-2 layers: the image size is a multiple of 8
G_LAYERS = ((4, 4, 2), (2, 4, 2), (1, 4, 2))  # (width multiplier, kernel, stride)
D_LAYERS = ((1, 3, 1), (2, 4, 2), (2, 3, 1), (4, 4, 2), (4, 3, 1), (8, 4, 2), (8, 3, 1))
LEAK = 0.1
DEFAULTS = {
    "width": 64,
    "g_spectral_norm": False,
    "hierarchical_z": False,
    "shared_embedding_dim": 0,
    "initializer": "normal",
}


def check(image_size: int, hierarchical_z: bool) -> None:
    """UsageError for a size not a multiple of 8, or a hierarchical latent (SNDCGAN has no
    blocks to split z over)."""
    if image_size < STRIDE or image_size % STRIDE:
        raise UsageError(f"compare_gan.image_size = {image_size}: sndcgan needs a multiple of 8")
    if hierarchical_z:
        raise UsageError("compare_gan.hierarchical_z = True: sndcgan has no blocks to split z")


def default_attention(image_size: int) -> tuple[str, str]:
    """No self-attention (SNDCGAN has no blocks)."""
    return "", ""


def block_names(image_size: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """No residual blocks, so none to attend after."""
    return (), ()


class Generator(tf_keras.Model):
    """{"noise", "label"} -> tanh images."""

    def __init__(self, spec: GanSpec, **kwargs):
        super().__init__(**kwargs)
        self.spec, self.seed_size = spec, spec.image_size // STRIDE
        self.seed_channels = 8 * spec.width
        conditional = spec.g_normalization == "batch" and spec.conditional
        self.embed_y = (
            layers.Embedding(
                spec.num_classes,
                spec.shared_embedding_dim,
                spectral_norm=spec.g_spectral_norm,
                initializer=spec.initializer,
                name="embed_y",
            )
            if conditional and spec.shared_embedding_dim > 0
            else None
        )
        self.fc = layers.Dense(
            self.seed_size**2 * self.seed_channels,
            spectral_norm=spec.g_spectral_norm,
            initializer=spec.initializer,
            name="g_fc1",
        )
        widths = [self.seed_size**2 * self.seed_channels] + [m * spec.width for m, _, _ in G_LAYERS]
        self.norms = [
            layers.normalization(
                spec.g_normalization,
                width,
                conditional=conditional,
                spectral_norm=spec.g_spectral_norm,
                initializer=spec.initializer,
                name=f"g_bn{i + 1}",
            )
            for i, width in enumerate(widths)
        ]
        shapes = [(m * spec.width, kernel, stride) for m, kernel, stride in G_LAYERS]
        self.deconvs = [
            layers.Conv2DTranspose(
                filters,
                kernel,
                stride,
                spectral_norm=spec.g_spectral_norm,
                initializer=spec.initializer,
                name=f"g_dc{i + 2}",
            )
            for i, (filters, kernel, stride) in enumerate([*shapes, (spec.channels, 3, 1)])
        ]

    def call(self, inputs: dict[str, tf.Tensor], training: bool | None = None) -> tf.Tensor:
        spec = self.spec
        classes = layers.class_vector(self.embed_y, inputs.get("label"), spec.num_classes, training)
        x = self.fc(inputs["noise"], training=training)
        x = tf.nn.relu(layers.normalize(self.norms[0], x, classes, training))
        x = tf.reshape(x, [-1, self.seed_size, self.seed_size, self.seed_channels])
        for deconv, norm in zip(self.deconvs[:-1], self.norms[1:], strict=True):
            x = tf.nn.relu(layers.normalize(norm, deconv(x, training=training), classes, training))
        return layers.to_images(self.deconvs[-1](x, training=training))


class Discriminator(tf_keras.Model):
    """{"image", "label"} -> logits [B]."""

    def __init__(self, spec: GanSpec, **kwargs):
        super().__init__(**kwargs)
        self.convs = [
            layers.Conv2D(
                m * spec.d_width,
                kernel,
                stride,
                spectral_norm=spec.d_spectral_norm,
                initializer=spec.initializer,
                name=f"d_conv{i + 1}",
            )
            for i, (m, kernel, stride) in enumerate(D_LAYERS)
        ]
        self.norms = [None] + [
            layers.normalization(spec.d_normalization, m * spec.d_width, name=f"d_norm{i + 2}")
            for i, (m, _, _) in enumerate(D_LAYERS[1:])
        ]
        self.final_fc = layers.Dense(
            1, spectral_norm=spec.d_spectral_norm, initializer=spec.initializer, name="d_fc1"
        )
        features = (spec.image_size // STRIDE) ** 2 * D_LAYERS[-1][0] * spec.d_width
        self.embedding_fc = layers.class_embedding(spec, features)

    def call(self, inputs: dict[str, tf.Tensor], training: bool | None = None) -> tf.Tensor:
        x = inputs["image"]
        for conv, norm in zip(self.convs, self.norms, strict=True):
            x = layers.normalize(norm, conv(x, training=training), None, training)
            x = tf.maximum(x, LEAK * x)  # compare_gan's lrelu
        features = tf.reshape(x, [-1, x.shape[1] * x.shape[2] * x.shape[3]])
        logits = self.final_fc(features, training=training)
        logits += layers.projection(self.embedding_fc, inputs.get("label"), features, training)
        return layers.to_logits(logits)
