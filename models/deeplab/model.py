"""Gin-configurable DeepLab builder (Model Garden's dilated ResNet or MobileNetV2 backbone, ASPP
with image pooling, and the DeepLab v3+ decoder that fuses stride-4 features), registered as
deeplabv3plus_resnet{50,101}, deeplabv3_resnet101 (no decoder), deeplabv3plus_resnet50_os32
(KerasHub's undilated layout) and deeplabv3plus_mobilenetv2 (full width and the half-width one
the built-in recipe trains)."""

from __future__ import annotations

import math

import gin
import tensorflow as tf
import tf_keras
from official.vision.configs import backbones, common, decoders
from official.vision.configs import semantic_segmentation as segmentation_config
from official.vision.modeling import factory

from models.core.errors import UsageError, check_choice
from models.core.registry import PublishedCount, register_model

BACKBONES = ("dilated_resnet", "mobilenet_v2", "resnet")
DEPTHS = (50, 101, 152, 200)  # Model Garden's dilated ResNets (bottleneck blocks only)
OUTPUT_STRIDES = (8, 16, 32)
BASE_RATES = (6, 12, 18)  # ASPP's atrous rates at output stride 16; doubled at 8 (the paper)


@gin.configurable
def deeplab(
    num_classes: int = 21,
    image_size: int = 512,
    backbone: str = "dilated_resnet",
    depth: int = 101,
    width_multiplier: float = 1.0,
    output_stride: int = 16,
    stem_type: str = "v1",
    multigrid: tuple[int, ...] | None = (1, 2, 4),
    aspp_rates: tuple[int, ...] | None = None,
    aspp_filters: int = 256,
    aspp_pool_size: tuple[int, int] | None = None,
    decoder: bool = True,
    low_level_filters: int = 48,
    head_convs: int = 2,
    head_filters: int = 256,
    separable: bool = False,
    activation: str = "relu",
    use_sync_bn: bool = False,
    norm_momentum: float = 0.99,
    norm_epsilon: float = 1e-3,
) -> tf_keras.Model:
    """DeepLab v3+ (Chen et al. 2018) as Model Garden builds it: the backbone's last blocks
    dilated to `output_stride`, ASPP (a 1x1 conv, three 3x3 atrous convs at `aspp_rates`, image
    pooling, global or over `aspp_pool_size` windows of the input; None: rates 6, 12, 18
    scaled to the stride), then with `decoder` the stride-4 features
    projected to `low_level_filters`, concatenated and refined by `head_convs` 3x3 convs
    (`separable`: depthwise-separable, as the MobileNet recipes) to logits at stride 4;
    without it (DeepLab v3) logits at the output stride. `stem_type` "v1" is the ResNet's
    three 3x3 convs (DeepLab's resnet_v1_beta), "v0" the 7x7 conv. `num_classes` counts the
    background (VOC: 21). Outputs {"logits": [B, h, w, num_classes]}."""
    check_choice(backbone, BACKBONES, "deeplab.backbone")
    check_choice(output_stride, OUTPUT_STRIDES, "deeplab.output_stride")
    if backbone == "dilated_resnet":
        check_choice(depth, DEPTHS, "deeplab.depth")
    if backbone == "resnet" and output_stride != 32:  # ASPP must read its last level, C5
        raise UsageError(f"deeplab.output_stride = {output_stride}: an undilated ResNet has 32")
    _check_sizes(num_classes, image_size, output_stride, aspp_filters, head_filters)
    level = int(math.log2(output_stride))
    rates = list(aspp_rates or [rate * 16 // output_stride for rate in BASE_RATES])
    config = segmentation_config.SemanticSegmentationModel(
        num_classes=num_classes,
        input_size=[image_size, image_size, 3],
        backbone=_backbone(
            backbone, depth, width_multiplier, output_stride, stem_type, multigrid, decoder
        ),
        decoder=decoders.Decoder(
            type="aspp",
            aspp=decoders.ASPP(
                level=level,
                dilation_rates=rates,
                num_filters=aspp_filters,
                pool_kernel_size=list(aspp_pool_size) if aspp_pool_size else None,
            ),
        ),
        head=segmentation_config.SegmentationHead(
            level=level,
            num_convs=head_convs,
            num_filters=head_filters,
            use_depthwise_convolution=separable,
            feature_fusion="deeplabv3plus" if decoder else None,
            low_level="2/depthwise" if backbone == "mobilenet_v2" else 2,
            low_level_num_filters=low_level_filters,
        ),
        norm_activation=common.NormActivation(
            activation=activation,
            use_sync_bn=use_sync_bn,
            norm_momentum=norm_momentum,
            norm_epsilon=norm_epsilon,
        ),
    )
    specs = tf_keras.layers.InputSpec(shape=[None, None, None, 3])
    model = factory.build_segmentation_model(specs, config)
    build_size = list(aspp_pool_size or (image_size, image_size))  # a pooling window fits
    model(tf.zeros([1, *build_size, 3]), training=False)  # builds ASPP and head
    return model


def _check_sizes(classes: int, image_size: int, stride: int, *filters: int) -> None:
    """UsageError (one line) for a size no DeepLab can have."""
    if classes < 2:
        raise UsageError(f"deeplab.num_classes = {classes}: need at least 2")
    if image_size < stride:
        raise UsageError(f"deeplab.image_size = {image_size}: below the output stride {stride}")
    for name, value in zip(("aspp_filters", "head_filters"), filters, strict=True):
        if value < 1:
            raise UsageError(f"deeplab.{name} = {value}: must be at least 1")


def _backbone(
    kind: str,
    depth: int,
    width_multiplier: float,
    output_stride: int,
    stem_type: str,
    multigrid: tuple[int, ...] | None,
    decoder: bool,
) -> backbones.Backbone:
    """Model Garden's backbone config: a dilated ResNet, or a MobileNetV2 whose last blocks are
    dilated and which (for the decoder) also gives its stride-4 depthwise features."""
    if kind == "resnet":
        return backbones.Backbone(
            type="resnet",
            resnet=backbones.ResNet(model_id=depth, depth_multiplier=width_multiplier),
        )
    if kind == "mobilenet_v2":
        return backbones.Backbone(
            type="mobilenet",
            mobilenet=backbones.MobileNet(
                model_id="MobileNetV2",
                filter_size_scale=width_multiplier,
                output_stride=output_stride,
                output_intermediate_endpoints=decoder,
            ),
        )
    return backbones.Backbone(
        type="dilated_resnet",
        dilated_resnet=backbones.DilatedResNet(
            model_id=depth,
            output_stride=output_stride,
            stem_type=stem_type,
            multigrid=list(multigrid) if multigrid else None,
        ),
    )


_TASK = "SemanticSegmentationTask"
# Model Garden's seg_deeplabv3plus_pascal (and _cityscapes): dilated ResNet-101 with the
# three-conv stem and multigrid (1, 2, 4), ASPP 6/12/18 at stride 16, a 2-conv decoder.
for _depth in (50, 101):
    register_model(
        f"deeplabv3plus_resnet{_depth}",
        family="deeplab",
        description=f"DeepLab v3+, dilated ResNet-{_depth} (3x3-conv stem, multigrid 1/2/4), "
        "ASPP 6/12/18 + image pooling, stride-4 decoder",
        task=_TASK,
        fixed={"backbone": "dilated_resnet", "depth": _depth, "decoder": True},
        min_image_size=64,
    )(deeplab)

# torchvision's DeepLab v3 (7x7 stem, ASPP, one 3x3 conv) is this variant with stem_type "v0",
# plus an auxiliary FCN head on layer3 used only in training (a 3x3 conv 1024->256, BN, a 1x1
# conv to 21 classes: 2,365,205): without it the counts are equal (tests/deeplab).
TORCHVISION_AUX_HEAD = 1024 * 256 * 9 + 2 * 256 + 256 * 21 + 21
register_model(
    "deeplabv3_resnet101",
    family="deeplab",
    description="DeepLab v3, dilated ResNet-101, ASPP 6/12/18 + image pooling, no decoder",
    task=_TASK,
    fixed={"backbone": "dilated_resnet", "depth": 101, "decoder": False},
    defaults={"head_convs": 1},
    min_image_size=64,
    published=(
        PublishedCount(
            "60,996,202",
            "torchvision DeepLabV3_ResNet101_Weights.COCO_WITH_VOC_LABELS_V1 (num_params)",
            counting="trainable",
            config={"num_classes": 21, "stem_type": "v0"},
            disagrees="torchvision counts its training-only auxiliary FCN head (2,365,205); "
            "without it the counts are equal",
        ),
    ),
)(deeplab)

# KerasHub's DeepLab v3+ (deeplab_v3_plus_resnet50_pascalvoc): an undilated ResNet-50, ASPP on
# C5 at stride 32, the 48-filter stride-4 decoder. Its head refines the fused features with one
# 1x1 conv (256, BN) that Model Garden's head (3x3 convs only) cannot build: here none.
_KERAS_HUB = "KerasHub deeplab_v3_plus_resnet50_pascalvoc"
register_model(
    "deeplabv3plus_resnet50_os32",
    family="deeplab",
    description="DeepLab v3+ in KerasHub's layout: ResNet-50 (undilated), ASPP 6/12/18 + image "
    "pooling on C5 at stride 32, stride-4 decoder without refining convs",
    task=_TASK,
    fixed={"backbone": "resnet", "depth": 50, "output_stride": 32, "decoder": True},
    defaults={"head_convs": 0},
    min_image_size=64,
    published=(
        PublishedCount(
            "39.1M",
            f"{_KERAS_HUB} model card (Keras weights, with BN statistics)",
            counting="keras_total",
            config={"num_classes": 21},
        ),
        PublishedCount(
            "39,190,656",
            f"{_KERAS_HUB} in keras_hub deeplab_v3_presets.py (params)",
            counting="keras_total",
            config={"num_classes": 21},
            disagrees="KerasHub's ResNet-50 is v2 and its head has a 1x1 conv (256, BN) more: "
            "0.18% above",
        ),
    ),
)(deeplab)

# Model Garden's mnv2_deeplabv3plus_cityscapes: MobileNetV2, a separable decoder.
for _name, _width in (("deeplabv3plus_mobilenetv2", 1.0), ("deeplabv3plus_mobilenetv2_050", 0.5)):
    register_model(
        _name,
        family="deeplab",
        description=f"DeepLab v3+, MobileNetV2 (width {_width}), ASPP 6/12/18 + image pooling, "
        "separable stride-4 decoder",
        task=_TASK,
        fixed={"backbone": "mobilenet_v2", "width_multiplier": _width, "decoder": True},
        defaults={"separable": True},
        min_image_size=32,
    )(deeplab)
