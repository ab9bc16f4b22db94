"""The ResNet of Kurach et al. 2019 at 32x32 (compare_gan's resnet_cifar; SN-GAN's CIFAR-10
ResNet, Miyato et al. 2018, table 4): the generator maps z to 4x4x(2 width), three upsampling
residual blocks of 2 width (256 at width 128), BN, ReLU, a 3x3 conv and tanh; the
discriminator has four residual blocks of `width` (128), the first two downsampling, every
shortcut a 3x3 conv, then ReLU, the mean over positions and a dense logit (plus the class
projection when conditional). The generator's last BN is conditional on the class when the
GAN is, as compare_gan's resnet_cifar."""

from __future__ import annotations

import tensorflow as tf

from models.compare_gan import layers
from models.compare_gan.layers import GanSpec
from models.core.errors import UsageError

G_BLOCKS, D_BLOCKS, D_DOWNSAMPLING = 3, 4, 2
SHORTCUT_KERNEL = 3  # resnet_ops' shortcuts are 3x3 convolutions
DEFAULTS = {
    "width": 128,
    "g_spectral_norm": False,
    "hierarchical_z": False,
    "shared_embedding_dim": 0,
    "initializer": "normal",
}


def check(image_size: int, hierarchical_z: bool) -> None:
    """UsageError for a resolution other than resnet_cifar's 32."""
    if image_size != 32:
        raise UsageError(
            f"compare_gan.image_size = {image_size}: resnet supports 32 (use biggan or "
            "sndcgan for other sizes)"
        )


def default_attention(image_size: int) -> tuple[str, str]:
    """No self-attention (resnet_cifar has none)."""
    return "", ""


def block_names(image_size: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The generator's and the discriminator's block names (B1, B2, ...)."""
    return layers.names(G_BLOCKS), layers.names(D_BLOCKS)


class Generator(layers.ResidualGenerator):
    """{"noise", "label"} -> tanh images [B, 32, 32, channels]."""

    def __init__(self, spec: GanSpec, **kwargs):
        super().__init__(**kwargs)
        self.spec, self.seed_channels = spec, 2 * spec.width
        self.names = layers.names(G_BLOCKS)
        self.embed_y = (
            layers.Embedding(
                spec.num_classes,
                spec.shared_embedding_dim,
                spectral_norm=spec.g_spectral_norm,
                initializer=spec.initializer,
                name="embed_y",
            )
            if spec.conditional and spec.shared_embedding_dim > 0
            else None
        )
        width = self.seed_channels
        self.fc_noise = layers.Dense(
            layers.SEED_SIZE * layers.SEED_SIZE * width,
            spectral_norm=spec.g_spectral_norm,
            initializer=spec.initializer,
            name="fc_noise",
        )
        self.blocks = [
            layers.GeneratorBlock(width, width, spec, SHORTCUT_KERNEL, name=name)
            for name in self.names
        ]
        self.attention = layers.attention_blocks(
            self.names, [width] * G_BLOCKS, spec.g_attention, spec.g_spectral_norm, spec.initializer
        )
        self.final_norm = layers.normalization(
            spec.g_normalization,
            width,
            conditional=spec.conditional,
            spectral_norm=spec.g_spectral_norm,
            initializer=spec.initializer,
            name="final_norm",
        )
        self.final_conv = layers.Conv2D(
            spec.channels,
            3,
            spectral_norm=spec.g_spectral_norm,
            initializer=spec.initializer,
            name="final_conv",
        )


class Discriminator(layers.ResidualDiscriminator):
    """{"image", "label"} -> logits [B]."""

    def __init__(self, spec: GanSpec, **kwargs):
        super().__init__(spec, tf.reduce_mean, **kwargs)
        self.names = layers.names(D_BLOCKS)
        self.blocks = [
            layers.DiscriminatorBlock(
                spec.channels if i == 0 else spec.d_width,
                spec.d_width,
                spec,
                SHORTCUT_KERNEL,
                downsample=i < D_DOWNSAMPLING,
                first=i == 0,
                name=name,
            )
            for i, name in enumerate(self.names)
        ]
        self.attention = layers.attention_blocks(
            self.names,
            [spec.d_width] * D_BLOCKS,
            spec.d_attention,
            spec.d_spectral_norm,
            spec.initializer,
        )
        self.embedding_fc = layers.class_embedding(spec, spec.d_width)
