"""Gin-configurable Inception builders: inception_v3, inception_v3_small and inception_v4.

`version="v3"` is tf_keras.applications.InceptionV3 (weights=None: nothing downloaded).
`version="v4"` is Inception-v4 (models/inception/inception_v4.py), written with this unit.
`version="v3_small"` is a small Inception-v3-style network for tiny images (the built-in
32x32 digits; InceptionV3 needs >= 75x75 and is too slow on 2 CPU cores there): the same
conv-BN-ReLU unit and the same three block types (35x35 "A" block, grid reduction,
factorised 1xn/nx1 "C" block), fewer blocks, scaled by `width_multiplier`.
"""

from __future__ import annotations

import gin
import tf_keras

from models.core.errors import UsageError
from models.core.registry import PublishedCount, register_model
from models.tasks.auxiliary import AuxiliaryLogits

VERSIONS = ("v3", "v3_small", "v4")
# InceptionV3 rejects inputs below 75x75; v4's valid-padding stem and reductions need 75 too.
MIN_IMAGE_SIZE = {"v3": 75, "v3_small": 16, "v4": 75}
AUX_SOURCE = {"v3": "mixed7", "v4": "mixed_6h"}  # the 17x17 grid TF-slim's AuxLogits reads
layers = tf_keras.layers


def conv_bn(x, filters: int, kernel: tuple[int, int], strides: int = 1, padding="same"):
    """The family's unit (InceptionV3 in tf_keras.applications, TF-slim's Inception-v4): conv
    without bias, BN without scale (epsilon 1e-3), ReLU."""
    x = layers.Conv2D(filters, kernel, strides=strides, padding=padding, use_bias=False)(x)
    x = layers.BatchNormalization(scale=False, epsilon=1e-3)(x)
    return layers.Activation("relu")(x)


def _block_a(x, width: int):
    """35x35-style block: 1x1 | 1x1-5x5 | 1x1-3x3-3x3 | avgpool-1x1 (InceptionV3 mixed0-2)."""
    b1 = conv_bn(x, 2 * width, (1, 1))
    b5 = conv_bn(conv_bn(x, 3 * width // 2, (1, 1)), 2 * width, (5, 5))
    b3 = conv_bn(conv_bn(conv_bn(x, 2 * width, (1, 1)), 3 * width, (3, 3)), 3 * width, (3, 3))
    bp = conv_bn(layers.AveragePooling2D(3, strides=1, padding="same")(x), width, (1, 1))
    return layers.Concatenate()([b1, b5, b3, bp])


def _reduction(x, width: int):
    """Grid reduction: 3x3/2 | 1x1-3x3-3x3/2 | maxpool/2 (InceptionV3 mixed3)."""
    b3 = conv_bn(x, 6 * width, (3, 3), strides=2)
    bd = conv_bn(conv_bn(x, 2 * width, (1, 1)), 3 * width, (3, 3))
    bd = conv_bn(bd, 3 * width, (3, 3), strides=2)
    bp = layers.MaxPooling2D(3, strides=2, padding="same")(x)
    return layers.Concatenate()([b3, bd, bp])


def _block_c(x, width: int, n: int = 7):
    """Factorised block: 1x1 | 1x1-1xn-nx1 | 1x1-nx1-1xn-nx1-1xn | avgpool-1x1 (mixed4-7)."""
    b1 = conv_bn(x, 6 * width, (1, 1))
    b7 = conv_bn(x, 4 * width, (1, 1))
    b7 = conv_bn(conv_bn(b7, 4 * width, (1, n)), 6 * width, (n, 1))
    bd = conv_bn(x, 4 * width, (1, 1))
    for kernel in ((n, 1), (1, n), (n, 1)):
        bd = conv_bn(bd, 4 * width, kernel)
    bd = conv_bn(bd, 6 * width, (1, n))
    bp = conv_bn(layers.AveragePooling2D(3, strides=1, padding="same")(x), 6 * width, (1, 1))
    return layers.Concatenate()([b1, b7, bd, bp])


def _v4(inputs):
    """Inception-v4's feature map (imported here: inception_v4.py imports this module's unit)."""
    from models.inception.inception_v4 import inception_v4_features

    return inception_v4_features(inputs)


def _small(inputs, width_multiplier: float):
    width = max(4, int(round(32 * width_multiplier)))
    x = conv_bn(inputs, width, (3, 3))
    x = conv_bn(x, 2 * width, (3, 3), strides=2)  # the stem halves the grid, as in v3
    x = _block_a(_block_a(x, width), width)
    x = _reduction(x, width)
    return _block_c(x, width, n=5)


def _network(version: str, shape, num_classes: int, dropout_rate: float, width: float):
    """The inference network: features, global average pool, dropout, dense logits."""
    if version == "v3" and not dropout_rate:
        return tf_keras.applications.InceptionV3(
            include_top=True,
            weights=None,
            input_shape=shape,
            classes=num_classes,
            classifier_activation=None,
        )
    if version == "v3":
        base = tf_keras.applications.InceptionV3(
            include_top=False, weights=None, input_shape=shape, pooling="avg"
        )
        inputs, x = base.input, base.output
    else:
        inputs = layers.Input(shape)
        x = layers.GlobalAveragePooling2D(name="avg_pool")(
            _v4(inputs) if version == "v4" else _small(inputs, width)
        )
    if dropout_rate:
        x = layers.Dropout(dropout_rate, name="dropout")(x)
    logits = layers.Dense(num_classes, name="predictions")(x)
    return tf_keras.Model(inputs, logits, name=f"inception_{version}")


def _aux_logits(x, num_classes: int):
    """TF-slim's AuxLogits: 5x5/3 average pool (smaller on small grids), 1x1 conv of 128, a
    conv of 768 over the whole remaining grid, dense logits."""
    pool = min(5, x.shape[1])
    x = layers.AveragePooling2D(pool, strides=3, padding="valid", name="aux_pool")(x)
    x = conv_bn(x, 128, (1, 1))
    x = conv_bn(x, 768, tuple(x.shape[1:3]), padding="valid")
    return layers.Dense(num_classes, name="aux_logits")(layers.Flatten()(x))


@gin.configurable
def inception(
    num_classes: int = 1000,
    image_size: int = 299,
    version: str = "v3",
    dropout_rate: float = 0.2,
    norm_momentum: float = 0.99,
    width_multiplier: float = 1.0,
    use_aux_head: bool = False,
) -> tf_keras.Model:
    """Inception classifier returning logits, global-average-pool + dropout + dense head.

    v3: tf_keras.applications.InceptionV3 (23,851,784 parameters at 1000 classes). With
    `dropout_rate` 0 it is the applications model with its own top (classifier_activation
    None); otherwise the same top with dropout before the dense layer (the slim/TPU reference
    keeps 0.8 of activations, i.e. 0.2). v4: Inception-v4 (42,711,400 parameters at 1000
    classes, BN moving statistics included), the same pool + dropout + dense head.
    `use_aux_head` (v3, v4) adds TF-slim's auxiliary classifier on the 17x17 grid (v3 after
    mixed7, v4 after mixed_6h), trained with `ImageClassificationTask.aux_loss_weight` as the
    TPU reference does and never run at eval or export (core.auxiliary.AuxiliaryLogits).
    `width_multiplier` applies to v3_small only (v3 and v4 have the papers' fixed widths).
    `norm_momentum` sets every BatchNormalization's moving-average momentum (tf_keras: 0.99,
    TPU reference: 0.996). Weight decay is the recipe's `weight_decay.rate`, applied by core.
    Cross-replica BN (`use_sync_bn`) is not supported: the applications model fixes its
    BatchNormalization layers.
    """
    _check(version, image_size, width_multiplier, use_aux_head)
    shape = (image_size, image_size, 3)
    network = _network(version, shape, num_classes, dropout_rate, width_multiplier)
    training_view = network
    if use_aux_head:
        aux = _aux_logits(network.get_layer(AUX_SOURCE[version]).output, num_classes)
        training_view = tf_keras.Model(network.input, [network.output, aux])
    for layer in training_view.layers:
        if isinstance(layer, layers.BatchNormalization):
            layer.momentum = norm_momentum
    if not use_aux_head:
        return network
    model = AuxiliaryLogits(network, training_view, name=network.name)
    model.build((None, *shape))
    return model


def _check(version: str, image_size: int, width_multiplier: float, use_aux_head: bool) -> None:
    """One UsageError for the first bad setting."""
    if version not in VERSIONS:
        raise UsageError(f"inception.version='{version}': use {', '.join(VERSIONS)}")
    if image_size < MIN_IMAGE_SIZE[version]:
        raise UsageError(
            f"inception.version='{version}' needs images of at least {MIN_IMAGE_SIZE[version]}"
            f"x{MIN_IMAGE_SIZE[version]}; set classification_input.image_size accordingly"
        )
    if version != "v3_small" and width_multiplier != 1.0:
        raise UsageError("inception.width_multiplier applies to version='v3_small' only")
    if use_aux_head and version not in AUX_SOURCE:
        raise UsageError(f"inception.use_aux_head applies to {' and '.join(AUX_SOURCE)} only")


# Published counts at 1000 classes. Szegedy et al. 2015 (arXiv 1512.00567) give only a bound
# for v3 ("less than 25 million parameters"); the v4 paper (arXiv 1602.07261) prints none.
PUBLISHED = {
    "v3": (
        PublishedCount(
            "23,851,784", "Keras Applications table, InceptionV3", counting="keras_total"
        ),
        PublishedCount(
            "27,161,264",
            "torchvision Inception_V3_Weights.IMAGENET1K_V1 model card (with AuxLogits)",
            config={"use_aux_head": True},
        ),
    ),
    "v4": (
        PublishedCount(
            "42.68M",
            "timm results/results-imagenet.csv, inception_v4.tf_in1k (TF-slim's, no AuxLogits)",
        ),
    ),
}
_DESCRIPTIONS = {
    "v3": "Inception-v3",
    "v4": "Inception-v4",
    "v3_small": "small Inception-v3-style net",
}

for _version in VERSIONS:
    register_model(
        f"inception_{_version}",
        family="inception",
        description=_DESCRIPTIONS[_version],
        fixed={"version": _version},
        defaults={"image_size": 32} if _version == "v3_small" else {},
        min_image_size=MIN_IMAGE_SIZE[_version],
        published=PUBLISHED.get(_version, ()),
    )(inception)
