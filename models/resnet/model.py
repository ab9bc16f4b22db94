"""Gin-configurable ResNet builders, registered as resnet10 ... resnet200."""

from __future__ import annotations

import gin
import tf_keras
from official.vision.modeling.backbones import resnet as resnet_backbone

from models.core.registry import PublishedCount, register_model
from models.tasks.classifier import classifier

DEPTHS = (10, 18, 34, 50, 101, 152, 200)


@gin.configurable
def resnet(
    num_classes: int = 1000,
    image_size: int = 224,
    depth: int = 50,
    width_multiplier: float = 1.0,
    use_sync_bn: bool = False,
    norm_momentum: float = 0.9,
    norm_epsilon: float = 1e-5,
    dropout_rate: float = 0.0,
    init_stochastic_depth_rate: float = 0.0,
    se_ratio: float | None = None,
) -> tf_keras.Model:
    """ResNet-`depth` v1.5 classifier: Model Garden backbone + global pool + dense head.
    Weight decay is the recipe's `weight_decay.rate`, applied by core, not a regulariser."""
    return classifier(
        resnet_backbone.ResNet,
        image_size,
        num_classes,
        dropout_rate,
        model_id=depth,
        depth_multiplier=width_multiplier,
        se_ratio=se_ratio,
        init_stochastic_depth_rate=init_stochastic_depth_rate,
        use_sync_bn=use_sync_bn,
        norm_momentum=norm_momentum,
        norm_epsilon=norm_epsilon,
    )


# torchvision's model cards (pytorch.org/vision, ResNet*_Weights.IMAGENET1K_V1 "num_params";
# timm's resnet50: 25.56M). v1.5 has v1's count (He et al. 2015, arXiv 1512.03385): only the
# stride moves to the 3x3 conv.
_TORCHVISION = "torchvision ResNet{}_Weights.IMAGENET1K_V1 model card (num_params)"
# Model Garden projects the first block's shortcut in every stage; torchvision keeps an identity
# where the width does not change (ResNet-18/34's first stage): one 1x1 conv of 64 and its BN.
_PROJECTED_SHORTCUT = "Model Garden's first stage has a projection shortcut (+4,224 parameters)"
PUBLISHED = {
    18: PublishedCount("11,689,512", _TORCHVISION.format(18), disagrees=_PROJECTED_SHORTCUT),
    34: PublishedCount("21,797,672", _TORCHVISION.format(34), disagrees=_PROJECTED_SHORTCUT),
    50: PublishedCount("25,557,032", _TORCHVISION.format(50)),
    101: PublishedCount("44,549,160", _TORCHVISION.format(101)),
    152: PublishedCount("60,192,808", _TORCHVISION.format(152)),
}

for _depth in DEPTHS:
    register_model(
        f"resnet{_depth}",
        family="resnet",
        description=f"ResNet-{_depth} v1.5",
        fixed={"depth": _depth},
        published=(PUBLISHED[_depth],) if _depth in PUBLISHED else (),
    )(resnet)
