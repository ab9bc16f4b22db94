"""The Object Detection API's single-stage meta-architecture (SSD, Liu et al. 2016, with a
feature pyramid as its TF2 model zoo builds it) composed in gin on Model Garden's parts: a
feature extractor, a feature pyramid (FPN, or FPN-lite's separable convolutions), a box
predictor shared across levels, the `anchors` grid, sigmoid or softmax scores and the
`detections` NMS. Registered under the zoo's names (ssd_mobilenet_v2_fpnlite, ...)."""

from __future__ import annotations

import gin
import tf_keras
from official.vision.configs import backbones, common, decoders
from official.vision.configs import retinanet as retinanet_config

from models.core.errors import check_choice
from models.core.registry import PublishedCount, register_model
from models.object_detection import (  # noqa: F401  (register their variants)
    faster_rcnn,
    ssd_resnet34,
)
from models.tasks.single_stage import build_single_stage, detection_settings


def _mobilenet_v2(width: float) -> backbones.Backbone:
    mobilenet = backbones.MobileNet(model_id="MobileNetV2", filter_size_scale=width)
    return backbones.Backbone(type="mobilenet", mobilenet=mobilenet)


def _resnet(depth: int):
    def backbone(width: float) -> backbones.Backbone:
        resnet = backbones.ResNet(model_id=depth, depth_multiplier=width)
        return backbones.Backbone(type="resnet", resnet=resnet)

    return backbone


# Feature extractors by the Object Detection API's names; Model Garden's ResNets are v1.5
# (stride on the 3x3 convolution), which has the same parameters as the API's v1.
FEATURE_EXTRACTORS = {
    "mobilenet_v2": _mobilenet_v2,
    "resnet34": _resnet(34),
    "resnet50_v1": _resnet(50),
    "resnet101_v1": _resnet(101),
}
# Feature pyramids: whether the pyramid's and the box predictor's convolutions are separable.
FEATURE_PYRAMIDS = {"fpn": False, "fpn_lite": True}


@gin.configurable
def ssd(
    num_classes: int = 91,
    image_size: int = 640,
    feature_extractor: str = "resnet50_v1",
    width_multiplier: float = 1.0,
    feature_pyramid: str = "fpn",
    pyramid_filters: int = 256,
    box_predictor_convs: int = 4,
    box_predictor_filters: int = 256,
    class_activation: str = "sigmoid",
    use_sync_bn: bool = False,
    norm_momentum: float = 0.997,
    norm_epsilon: float = 1e-3,
) -> tf_keras.Model:
    """An SSD of `feature_extractor` (at `width_multiplier`) and `feature_pyramid` with
    `pyramid_filters` channels over the `anchors` levels, and a box predictor of
    `box_predictor_convs` shared convolutions before its class and box outputs (the API's
    WeightSharedConvolutionalBoxPredictor; separable with FPN-lite). `class_activation`:
    "sigmoid" (focal loss) or "softmax" (SSD's hard-negative loss). `num_classes` counts the
    background (COCO: 91). Defaults: the API's ssd_resnet50_v1_fpn_640x640 (RetinaNet-50)."""
    extractor = check_choice(feature_extractor, FEATURE_EXTRACTORS, "ssd.feature_extractor")
    pyramid = check_choice(feature_pyramid, FEATURE_PYRAMIDS, "ssd.feature_pyramid")
    separable = FEATURE_PYRAMIDS[pyramid]
    return build_single_stage(
        num_classes,
        image_size,
        backbone=FEATURE_EXTRACTORS[extractor](width_multiplier),
        fpn=decoders.FPN(num_filters=pyramid_filters, use_separable_conv=separable),
        head=retinanet_config.RetinaNetHead(
            num_convs=box_predictor_convs,
            num_filters=box_predictor_filters,
            use_separable_conv=separable,
        ),
        norm_activation=common.NormActivation(
            activation="relu6" if extractor == "mobilenet_v2" else "relu",
            use_sync_bn=use_sync_bn,
            norm_momentum=norm_momentum,
            norm_epsilon=norm_epsilon,
        ),
        generator=detection_settings(),
        class_activation=class_activation,
        owner="ssd",
    )


def _zoo_entry(extractor: str, pyramid: str, description: str, **defaults) -> dict:
    fixed = {"feature_extractor": extractor, "feature_pyramid": pyramid}
    return {"description": description, "fixed": fixed, "defaults": defaults}


# The TF2 detection zoo's compositions (research/object_detection/configs/tf2/*.config); any
# other is a few gin lines away (ssd.pyramid_filters, .box_predictor_convs, anchors, losses).
ZOO = {
    "ssd_mobilenet_v2_fpnlite": _zoo_entry(
        "mobilenet_v2",
        "fpn_lite",
        "SSD, MobileNet v2 + FPN-lite (128 separable filters)",
        pyramid_filters=128,
        box_predictor_filters=128,
    ),
    "ssd_resnet50_v1_fpn": _zoo_entry(
        "resnet50_v1", "fpn", "SSD, ResNet-50 + FPN (P3-P7): the API's RetinaNet-50"
    ),
    "ssd_resnet101_v1_fpn": _zoo_entry(
        "resnet101_v1", "fpn", "SSD, ResNet-101 + FPN (P3-P7): the API's RetinaNet-101"
    ),
}
# torchvision's retinanet_resnet50_fpn (RetinaNet_ResNet50_FPN_Weights.COCO_V1 model card,
# num_params 34,014,999 at 91 classes) has the same layers as the API's RetinaNet-50 (a
# 4-conv predictor shared across P3-P7), without BN parameters (frozen in its backbone).
PUBLISHED = {
    "ssd_resnet50_v1_fpn": PublishedCount(
        "34,014,999",
        "torchvision RetinaNet_ResNet50_FPN_Weights.COCO_V1 model card (num_params)",
        counting="without_bn",
        config={"num_classes": 91},
    )
}
for _name, _entry in ZOO.items():
    register_model(
        _name,
        family="object_detection",
        task="DetectionTask",
        min_image_size=128,
        published=(PUBLISHED[_name],) if _name in PUBLISHED else (),
        **_entry,
    )(ssd)
