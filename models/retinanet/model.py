"""Gin-configurable RetinaNet builders (Model Garden's backbone, FPN, head and detection
generator), registered as retinanet_resnet{18,34,50,101}_fpn."""

from __future__ import annotations

import gin
import tf_keras
from official.vision.configs import backbones, common, decoders
from official.vision.configs import retinanet as retinanet_config

from models.core.registry import PublishedCount, register_model
from models.tasks.single_stage import build_single_stage, detection_settings

DEPTHS = (18, 34, 50, 101)


@gin.configurable
def retinanet(
    num_classes: int = 91,
    image_size: int = 640,
    depth: int = 50,
    width_multiplier: float = 1.0,
    fpn_filters: int = 256,
    head_convs: int = 4,
    head_filters: int = 256,
    use_sync_bn: bool = False,
    norm_momentum: float = 0.997,
    norm_epsilon: float = 1e-4,
) -> tf_keras.Model:
    """RetinaNet on a ResNet-`depth` v1.5 backbone with FPN over the `anchors` levels;
    `num_classes` counts the background (COCO: 91). Defaults: Model Garden's
    retinanet_resnetfpn_coco; the NMS is gin's `detections` (models.tasks.single_stage)."""
    return build_single_stage(
        num_classes,
        image_size,
        backbone=backbones.Backbone(
            type="resnet",
            resnet=backbones.ResNet(model_id=depth, depth_multiplier=width_multiplier),
        ),
        fpn=decoders.FPN(num_filters=fpn_filters),
        head=retinanet_config.RetinaNetHead(num_convs=head_convs, num_filters=head_filters),
        norm_activation=common.NormActivation(
            activation="relu",
            use_sync_bn=use_sync_bn,
            norm_momentum=norm_momentum,
            norm_epsilon=norm_epsilon,
        ),
        generator=detection_settings(),
        owner="retinanet",
    )


# torchvision's retinanet_resnet50_fpn (RetinaNet_ResNet50_FPN_Weights.COCO_V1 model card,
# num_params 34,014,999 at 91 classes): the same layers, kernel for kernel and bias for bias.
# It has no BN parameters (frozen BN buffers in the backbone, none in FPN and head); Model
# Garden adds BN to the FPN outputs and per level to the head convs: hence "without_bn".
PUBLISHED = {
    50: PublishedCount(
        "34,014,999",
        "torchvision RetinaNet_ResNet50_FPN_Weights.COCO_V1 model card (num_params)",
        counting="without_bn",
        config={"num_classes": 91},
    )
}

for _depth in DEPTHS:
    register_model(
        f"retinanet_resnet{_depth}_fpn",
        family="retinanet",
        description=f"RetinaNet, ResNet-{_depth} v1.5 + FPN (P3-P7), focal loss",
        task="DetectionTask",
        fixed={"depth": _depth},
        min_image_size=128,
        published=(PUBLISHED[_depth],) if _depth in PUBLISHED else (),
    )(retinanet)
