"""BigGAN (Brock et al. 2019) as compare_gan's resnet_biggan re-implements it: channel
multipliers of `width` (compare_gan's ch, 96 in the paper) per resolution, a hierarchical latent
and a shared class embedding feeding conditional BN, 1x1 shortcut convolutions, self-attention
after the named blocks, an unconditional last BN and tanh in the generator; in the
discriminator no shortcut convolution where a block keeps its width, sum pooling, a last block
that does not downsample and a projection of the class embedding.

compare_gan's trainable variables at 1000 classes and width 96 (resnet_biggan.py's docstring;
its resnet_biggan_test.py checks 128): 128x128 (z 120, attention G B4, D B1): G 70,433,988,
D 87,982,370; 256x256 (z 140, B5, B2): G 82,097,604, D 98,635,298; 512x512 (z 160, B4, B3):
G 82,468,068, D 98,801,378.
"""

from __future__ import annotations

import tensorflow as tf

from models.compare_gan import layers
from models.compare_gan.layers import GanSpec
from models.core.errors import UsageError

# Channel multipliers of `width`: the generator's block inputs then its last output; the
# discriminator's block outputs (its first input is the image).
G_MULTIPLIERS = {
    32: (4, 4, 4, 4),
    64: (16, 16, 8, 4, 2),
    128: (16, 16, 8, 4, 2, 1),
    256: (16, 16, 8, 8, 4, 2, 1),
    512: (16, 16, 8, 8, 4, 2, 1, 1),
}
D_MULTIPLIERS = {
    32: (2, 2, 2, 2),
    64: (2, 4, 8, 16, 16),
    128: (1, 2, 4, 8, 16, 16),
    256: (1, 2, 4, 8, 8, 16, 16),
    512: (1, 1, 2, 4, 8, 8, 16, 16),
}
# (generator, discriminator) blocks followed by self-attention: compare_gan's required settings
# at 128, 256 and 512 (64x64 features), its defaults (G B4, D B1) elsewhere; 32 has no G B4.
ATTENTION = {
    32: ("", "B1"),
    64: ("B4", "B1"),
    128: ("B4", "B1"),
    256: ("B5", "B2"),
    512: ("B4", "B3"),
}
# The biggan_imagenet128 recipe's generator: spectral norm, embed_y of 128, hierarchical z,
# orthogonal initialisation.
DEFAULTS = {
    "width": 96,
    "g_spectral_norm": True,
    "hierarchical_z": True,
    "shared_embedding_dim": 128,
    "initializer": "orthogonal",
}


def check(image_size: int, hierarchical_z: bool) -> None:
    """UsageError for a resolution compare_gan's BigGAN does not have."""
    if image_size not in G_MULTIPLIERS:
        sizes = ", ".join(map(str, G_MULTIPLIERS))
        raise UsageError(f"compare_gan.image_size = {image_size}: biggan supports {sizes}")


def default_attention(image_size: int) -> tuple[str, str]:
    """The generator's and the discriminator's blocks followed by self-attention."""
    return ATTENTION[image_size]


def block_names(image_size: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The generator's and the discriminator's block names (B1, B2, ...)."""
    return layers.names(len(G_MULTIPLIERS[image_size]) - 1), layers.names(
        len(D_MULTIPLIERS[image_size])
    )


class Generator(layers.ResidualGenerator):
    """{"noise", "label"} -> tanh images: dense to 4x4, upsampling blocks, BN, ReLU, conv."""

    def __init__(self, spec: GanSpec, **kwargs):
        super().__init__(**kwargs)
        widths = [spec.width * m for m in G_MULTIPLIERS[spec.image_size]]
        self.spec, self.seed_channels = spec, widths[0]
        self.names = layers.names(len(widths) - 1)
        embedded = spec.conditional and spec.shared_embedding_dim > 0
        self.embed_y = (
            layers.Embedding(
                spec.num_classes,
                spec.shared_embedding_dim,
                initializer=spec.initializer,
                name="embed_y",
            )
            if embedded
            else None
        )
        self.fc_noise = layers.Dense(
            layers.SEED_SIZE * layers.SEED_SIZE * widths[0],
            spectral_norm=spec.g_spectral_norm,
            initializer=spec.initializer,
            name="fc_noise",
        )
        self.blocks = [
            layers.GeneratorBlock(cin, cout, spec, shortcut_kernel=1, name=name)
            for name, cin, cout in zip(self.names, widths[:-1], widths[1:], strict=True)
        ]
        self.attention = layers.attention_blocks(
            self.names, widths[1:], spec.g_attention, spec.g_spectral_norm, spec.initializer
        )
        self.final_norm = layers.normalization(spec.g_normalization, widths[-1], name="final_norm")
        self.final_conv = layers.Conv2D(
            spec.channels,
            3,
            spectral_norm=spec.g_spectral_norm,
            initializer=spec.initializer,
            name="final_conv",
        )


class Discriminator(layers.ResidualDiscriminator):
    """{"image", "label"} -> logits [B]: downsampling blocks (the last keeps its resolution),
    ReLU, sum over positions, a dense logit plus the class projection."""

    def __init__(self, spec: GanSpec, **kwargs):
        super().__init__(spec, tf.reduce_sum, **kwargs)
        widths = [spec.d_width * m for m in D_MULTIPLIERS[spec.image_size]]
        inputs = [spec.channels, *widths[:-1]]
        self.names = layers.names(len(widths))
        self.blocks = [
            layers.DiscriminatorBlock(
                cin,
                cout,
                spec,
                shortcut_kernel=1,
                downsample=i < len(widths) - 1,
                conv_shortcut=cin != cout,
                first=i == 0,
                name=name,
            )
            for i, (name, cin, cout) in enumerate(zip(self.names, inputs, widths, strict=True))
        ]
        self.attention = layers.attention_blocks(
            self.names, widths, spec.d_attention, spec.d_spectral_norm, spec.initializer
        )
        self.embedding_fc = layers.class_embedding(spec, widths[-1], "glorot_normal")
