"""Gin-configurable EfficientNet builders, registered as efficientnet_b0 ... efficientnet_b7."""

from __future__ import annotations

import gin
import tf_keras
from official.vision.modeling.backbones import efficientnet as efficientnet_backbone

from models.core.errors import UsageError
from models.core.registry import PublishedCount, register_model
from models.tasks.classifier import classifier

# Native resolution and head dropout of each variant (Tan & Le 2019; tensorflow/tpu
# efficientnet_builder.efficientnet_params). Width/depth scaling is Model Garden's SCALING_MAP.
VARIANTS = {
    "b0": (224, 0.2),
    "b1": (240, 0.2),
    "b2": (260, 0.3),
    "b3": (300, 0.3),
    "b4": (380, 0.4),
    "b5": (456, 0.4),
    "b6": (528, 0.5),
    "b7": (600, 0.5),
}


@gin.configurable
def efficientnet(
    num_classes: int = 1000,
    image_size: int = 224,
    variant: str = "b0",
    dropout_rate: float = 0.2,
    drop_connect_rate: float = 0.2,
    se_ratio: float = 0.25,
    activation: str = "swish",
    use_sync_bn: bool = False,
    norm_momentum: float = 0.99,
    norm_epsilon: float = 1e-3,
) -> tf_keras.Model:
    """EfficientNet-`variant` classifier: Model Garden backbone (stem, MBConv blocks with
    squeeze-excitation and drop connect, 1x1 conv to 1280 x width + BN + swish) + global pool,
    dropout and a dense head that outputs logits. Weight decay is the recipe's
    `weight_decay.rate`, applied by core, not a regulariser."""
    if variant not in efficientnet_backbone.SCALING_MAP:
        raise UsageError(f"efficientnet.variant='{variant}': use one of {', '.join(VARIANTS)}")
    return classifier(
        efficientnet_backbone.EfficientNet,
        image_size,
        num_classes,
        dropout_rate,
        kernel_initializer="random_uniform",
        model_id=variant,
        se_ratio=se_ratio,
        stochastic_depth_drop_rate=drop_connect_rate,
        activation=activation,
        se_inner_activation=activation,
        use_sync_bn=use_sync_bn,
        norm_momentum=norm_momentum,
        norm_epsilon=norm_epsilon,
    )


# Tan & Le 2019, arXiv 1905.11946, table 2 (#Params, 1000 classes). These networks equal
# tf_keras.applications.EfficientNetB* (the tensorflow/tpu port) exactly.
PAPER_PARAMS = {
    "b0": "5.3M",
    "b1": "7.8M",
    "b2": "9.2M",
    "b3": "12M",
    "b4": "19M",
    "b5": "30M",
    "b6": "43M",
    "b7": "66M",
}
_PAPER = "Tan & Le 2019, arXiv 1905.11946, table 2"
_DISAGREES = {
    "b2": "9,109,994 here and in tf_keras.applications.EfficientNetB2 (9.1M); table 2 prints 9.2M"
}

for _variant, (_size, _dropout) in VARIANTS.items():
    register_model(
        f"efficientnet_{_variant}",
        family="efficientnet",
        description=f"EfficientNet-{_variant.upper()} ({_size}x{_size})",
        fixed={"variant": _variant},
        defaults={"image_size": _size, "dropout_rate": _dropout},
        published=(
            PublishedCount(PAPER_PARAMS[_variant], _PAPER, disagrees=_DISAGREES.get(_variant, "")),
        ),
    )(efficientnet)
