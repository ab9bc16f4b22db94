"""Gin-configurable ResNet builders, registered as resnet10 ... resnet200."""

from __future__ import annotations

import functools

import gin
import tf_keras
from official.vision.modeling.backbones import resnet as resnet_backbone

from models.core.classifier import classifier
from models.registry import register_model

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


for _depth in DEPTHS:
    register_model(f"resnet{_depth}", family="resnet", description=f"ResNet-{_depth} v1.5")(
        functools.partial(resnet, depth=_depth)
    )
