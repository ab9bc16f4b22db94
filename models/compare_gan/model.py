"""Compare GAN's architectures (Kurach et al. 2019, "A Large-Scale Study on Regularization and
Normalization in GANs", and Google's compare_gan, whose TPU BigGAN it grew into) as one
gin-configurable builder of a generator and a discriminator (core.adversarial.AdversarialPair):
SNDCGAN, the SN-GAN ResNet at 32x32 and BigGAN at 32 to 512 pixels, with the study's
discriminator normalisations (none, batch, layer, spectral) and the generator's batch norm,
class-conditional (BigGAN's shared embedding and hierarchical z) when the GAN is.

Registered: biggan_128, biggan_256 and biggan_512, compare_gan's resnet_biggan at width 96 (its
parameter counts), and biggan_32, sndcgan_32 and sngan_resnet_32, small enough to train on the
built-in digits on a CPU.

Differences from compare_gan: images in [-1, 1] (tanh; compare_gan maps them to [0, 1]), so the
discriminator's first residual block has no ReLU before its first conv (an identity on [0, 1]);
a BigGAN discriminator block that keeps its width adds its input (compare_gan adds nothing);
conditional BN's gain is 1 + W c (BigGAN's; compare_gan's is W c); inference uses moving
averages of the BN statistics (compare_gan's BigGAN recipe accumulates them before evaluating).
"""

from __future__ import annotations

import gin

from models.compare_gan import biggan, resnet, sndcgan
from models.compare_gan.layers import (
    D_NORMALIZATIONS,
    G_NORMALIZATIONS,
    INITIALIZERS,
    UPSAMPLINGS,
    GanSpec,
)
from models.core.errors import UsageError, check_choice
from models.core.registry import PublishedCount, register_model
from models.tasks.adversarial import AdversarialPair

ARCHITECTURES = {"sndcgan": sndcgan, "resnet": resnet, "biggan": biggan}


@gin.configurable
def compare_gan(
    architecture: str = "biggan",
    image_size: int = 32,
    channels: int = 3,
    num_classes: int = 10,
    z_dim: int = 128,
    width: int | None = None,
    d_width: int | None = None,
    d_normalization: str = "spectral",
    g_normalization: str = "batch",
    g_spectral_norm: bool | None = None,
    hierarchical_z: bool | None = None,
    shared_embedding_dim: int | None = None,
    g_attention: str | None = None,
    d_attention: str | None = None,
    upsampling: str = "unpool",
    initializer: str | None = None,
) -> AdversarialPair:
    """A Compare GAN pair, its variables built. `architecture`: sndcgan, resnet or biggan;
    `num_classes` 0 is unconditional, else the generator's BN is class-conditional (with
    `g_normalization` "batch") and the discriminator projects the class. `width`: the
    architecture's channel unit (BigGAN's ch, 96; SNDCGAN 64; ResNet 128), `d_width` the
    discriminator's where it differs (BigGAN-PyTorch's D_ch; None: `width`). `g_attention`,
    `d_attention`: comma-separated blocks followed by self-attention ("B4"; "" for none).
    `upsampling`: "unpool" (compare_gan's zero insertion) or "nearest" (BigGAN's).
    `initializer`: "normal" (N(0, 0.02)) or "orthogonal". None: the architecture's own
    (BigGAN: width 96, spectral norm in G, hierarchical z, a 128-wide shared embedding,
    orthogonal; the others: none of these, one-hot classes, normal)."""
    spec = _spec(
        architecture=architecture,
        image_size=image_size,
        channels=channels,
        num_classes=num_classes,
        z_dim=z_dim,
        width=width,
        d_width=d_width,
        d_normalization=d_normalization,
        g_normalization=g_normalization,
        g_spectral_norm=g_spectral_norm,
        hierarchical_z=hierarchical_z,
        shared_embedding_dim=shared_embedding_dim,
        g_attention=g_attention,
        d_attention=d_attention,
        upsampling=upsampling,
        initializer=initializer,
    )
    module = ARCHITECTURES[architecture]
    pair = AdversarialPair(
        module.Generator(spec, name="generator"),
        module.Discriminator(spec, name="discriminator"),
        z_dim=z_dim,
        num_classes=num_classes,
        image_size=image_size,
        channels=channels,
        name=f"compare_gan_{architecture}",
    )
    return pair.build_both()


def _spec(architecture: str, **arguments) -> GanSpec:
    """The builder's arguments checked (UsageError, one line), with the architecture's own
    defaults where they are None and the attention blocks parsed."""
    check_choice(architecture, ARCHITECTURES, "compare_gan.architecture")
    check_choice(arguments["d_normalization"], D_NORMALIZATIONS, "compare_gan.d_normalization")
    check_choice(arguments["g_normalization"], G_NORMALIZATIONS, "compare_gan.g_normalization")
    check_choice(arguments["upsampling"], UPSAMPLINGS, "compare_gan.upsampling")
    module = ARCHITECTURES[architecture]
    for name, default in module.DEFAULTS.items():
        if arguments[name] is None:
            arguments[name] = default
    if arguments["d_width"] is None:
        arguments["d_width"] = arguments["width"]
    check_choice(arguments["initializer"], INITIALIZERS, "compare_gan.initializer")
    _check_sizes(arguments)
    size, hierarchical = arguments["image_size"], bool(arguments["hierarchical_z"])
    module.check(size, hierarchical)
    g_names, d_names = module.block_names(size)
    g_default, d_default = module.default_attention(size)
    arguments["g_attention"] = _blocks(arguments["g_attention"], g_default, g_names, "g_attention")
    arguments["d_attention"] = _blocks(arguments["d_attention"], d_default, d_names, "d_attention")
    if hierarchical:
        _check_split(arguments["z_dim"], len(g_names) + 1)
    arguments["hierarchical_z"] = hierarchical
    arguments["g_spectral_norm"] = bool(arguments["g_spectral_norm"])
    return GanSpec(**arguments)


def _check_sizes(arguments: dict) -> None:
    """UsageError for a size that cannot be (classes and embedding widths may be 0)."""
    for name in ("image_size", "channels", "z_dim", "width", "d_width"):
        if arguments[name] < 1:
            raise UsageError(f"compare_gan.{name} = {arguments[name]}: must be at least 1")
    for name in ("num_classes", "shared_embedding_dim"):
        if arguments[name] < 0:
            raise UsageError(f"compare_gan.{name} = {arguments[name]}: must be at least 0")


def _blocks(value: str | None, default: str, names: tuple[str, ...], setting: str) -> tuple:
    """Comma-separated block names (None: the default) as a tuple, each one of `names`."""
    chosen = tuple(n.strip() for n in (default if value is None else value).split(",") if n.strip())
    for name in chosen:
        if name not in names:
            known = ", ".join(names) or "no blocks"
            raise UsageError(f"compare_gan.{setting} = {value!r}: {name} is not a block ({known})")
    return chosen


def _check_split(z_dim: int, chunks: int) -> None:
    """A hierarchical latent splits z into equal chunks: the dense layer's and a block's each."""
    if z_dim % chunks:
        raise UsageError(
            f"compare_gan.z_dim = {z_dim}: a hierarchical latent splits it into {chunks} equal "
            f"chunks (the dense layer's and one a block's); use a multiple of {chunks} or "
            "hierarchical_z = False"
        )


# compare_gan's resnet_biggan.py docstring (128: also its resnet_biggan_test.py's
# testNumberOfParameters): trainable variables of G and of D at 1000 classes, width 96.
_COUNTS = "compare_gan resnet_biggan.py docstring: trainable variables of {}"
BIGGAN = {  # image size: (z_dim, G attention, D attention, G count, D count)
    128: (120, "B4", "B1", "70,433,988", "87,982,370"),
    256: (140, "B5", "B2", "82,097,604", "98,635,298"),
    512: (160, "B4", "B3", "82,468,068", "98,801,378"),
}


for _size, (_z, _g, _d, _g_count, _d_count) in BIGGAN.items():
    register_model(
        f"biggan_{_size}",
        "compare_gan",
        f"BigGAN {_size}x{_size} as compare_gan's resnet_biggan (ch 96, z {_z}, attention "
        f"G {_g} / D {_d}, shared embedding, hierarchical z, SN in G and D)",
        task="ImageGenerationTask",
        fixed={
            "architecture": "biggan",
            "image_size": _size,
            "width": 96,
            "z_dim": _z,
            "g_attention": _g,
            "d_attention": _d,
            "hierarchical_z": True,
            "shared_embedding_dim": 128,
        },
        # image_size again: ModelEntry.image_size (the native size) reads the defaults
        defaults={"image_size": _size, "num_classes": 1000},
        published=tuple(
            PublishedCount(count, _COUNTS.format(part), counting="trainable", part=part)
            for part, count in (("generator", _g_count), ("discriminator", _d_count))
        ),
    )(compare_gan)

# Small variants for the built-in digits (32x32x3, 10 classes) on a CPU.
SMALL = {
    "biggan_32": ("biggan", 16, "BigGAN at 32x32 (compare_gan's CIFAR multipliers), ch 16"),
    "sndcgan_32": ("sndcgan", 16, "SNDCGAN (Kurach et al. 2019) at 32x32, width 16 (paper 64)"),
    "sngan_resnet_32": (
        "resnet",
        16,
        "SN-GAN ResNet (Kurach et al. 2019) at 32x32, width 16 (128)",
    ),
}
for _name, (_architecture, _width, _description) in SMALL.items():
    register_model(
        _name,
        "compare_gan",
        _description,
        task="ImageGenerationTask",
        fixed={"architecture": _architecture, "image_size": 32},
        defaults={"image_size": 32, "width": _width, "num_classes": 10},
    )(compare_gan)
