"""MLPerf's SSD-ResNet34 at 300x300 (mlcommons/training single_stage_detector; Google's MLPerf
v0.5/v0.6 TPU submissions): ResNet-34 through conv4_x with conv4_1 at stride 1 (38x38 at
stride 8, no atrous), five extra 1x1 + 3x3 blocks with bias and ReLU and no BN (19, 10, 5, 3, 1
cells), and one 3x3 class and one 3x3 box convolution per level over SSD's default boxes
(`ssd_anchors`: 4, 6, 6, 6, 4, 4 per cell), built from Model Garden's residual blocks, head
and detection generator."""

from __future__ import annotations

import gin
import tf_keras
from official.vision.configs import common
from official.vision.modeling import retinanet_model
from official.vision.modeling.heads import dense_prediction_heads
from official.vision.modeling.layers import nn_blocks

from models.core.errors import check_choice
from models.core.registry import PublishedCount, register_model
from models.data.anchors import SsdAnchors
from models.tasks.single_stage import CLASS_ACTIVATIONS, detection_generator

# (filters, blocks, stride) of conv2_x, conv3_x and conv4_x (conv4_1's stride 2 made 1).
RESNET34_GROUPS = ((64, 3, 1), (128, 4, 2), (256, 6, 1))
# (1x1 filters, 3x3 filters, 3x3 stride, padding) of the extra blocks after conv4_x.
EXTRA_BLOCKS = (
    (256, 512, 2, "same"),
    (256, 512, 2, "same"),
    (128, 256, 2, "same"),
    (128, 256, 1, "valid"),
    (128, 256, 1, "valid"),
)


def resnet34_conv4(image_size: int, norm: common.NormActivation) -> tf_keras.Model:
    """ResNet-34's stem, conv2_x, conv3_x and conv4_x at stride 8: {"3": [B, S/8, S/8, 256]}."""
    images = tf_keras.Input([image_size, image_size, 3])
    bn = {"momentum": norm.norm_momentum, "epsilon": norm.norm_epsilon}
    x = tf_keras.layers.Conv2D(64, 7, 2, "same", use_bias=False, name="stem_conv")(images)
    x = tf_keras.layers.BatchNormalization(**bn, name="stem_bn")(x)
    x = tf_keras.layers.Activation("relu")(x)
    x = tf_keras.layers.MaxPool2D(3, 2, "same")(x)
    for filters, blocks, stride in RESNET34_GROUPS:
        for index in range(blocks):
            x = nn_blocks.ResidualBlock(
                filters,
                strides=stride if index == 0 else 1,
                use_projection=index == 0 and filters != 64,
                use_sync_bn=norm.use_sync_bn,
                norm_momentum=norm.norm_momentum,
                norm_epsilon=norm.norm_epsilon,
            )(x)
    return tf_keras.Model(images, {"3": x}, name="resnet34_conv4")


def extra_layers(backbone: tf_keras.Model) -> tf_keras.Model:
    """Conv4_x's features, then each extra block's, keyed by level from "3" on."""
    features = {"3": tf_keras.Input(backbone.output["3"].shape[1:])}
    x = features["3"]
    levels = dict(features)
    for index, (reduced, filters, stride, padding) in enumerate(EXTRA_BLOCKS):
        x = tf_keras.layers.Conv2D(reduced, 1, activation="relu")(x)
        x = tf_keras.layers.Conv2D(filters, 3, stride, padding, activation="relu")(x)
        levels[str(4 + index)] = x
    return tf_keras.Model(features, levels, name="ssd_extra_layers")


@gin.configurable
def ssd_resnet34(
    num_classes: int = 81,
    image_size: int = 300,
    class_activation: str = "softmax",
    use_sync_bn: bool = False,
    norm_momentum: float = 0.997,
    norm_epsilon: float = 1e-5,
) -> tf_keras.Model:
    """The whole detector over `ssd_anchors`, softmax-scored as MLPerf trains it;
    `num_classes` counts the background (COCO: 81 in MLPerf's contiguous ids, 91 in COCO's)."""
    anchors = SsdAnchors()
    anchors.check_image_size(image_size, "ssd_resnet34.image_size")
    check_choice(class_activation, CLASS_ACTIVATIONS, "ssd_resnet34.class_activation")
    norm = common.NormActivation(
        use_sync_bn=use_sync_bn, norm_momentum=norm_momentum, norm_epsilon=norm_epsilon
    )
    backbone = resnet34_conv4(image_size, norm)
    decoder = extra_layers(backbone)
    levels = anchors.levels
    head = dense_prediction_heads.RetinaNetHead(
        min_level=int(levels[0]),
        max_level=int(levels[-1]),
        num_classes=num_classes,
        num_anchors_per_location=anchors.per_location(),
        num_convs=0,
        share_level_convs=False,
    )
    head(decoder(backbone(tf_keras.Input([image_size, image_size, 3]))))
    boxes = {level: tf_keras.backend.constant(b) for level, b in anchors.boxes().items()}
    model = retinanet_model.RetinaNetModel(
        backbone,
        decoder,
        head,
        detection_generator(class_activation),
        anchor_boxes=boxes,
        min_level=int(levels[0]),
        max_level=int(levels[-1]),
    )
    model.class_activation = class_activation
    return model


# The only published count of these layers: Intel's Open Model Zoo card of MLPerf Inference's
# SSD-ResNet34 (same layers at 1200x1200; a count does not depend on the input size).
PUBLISHED = PublishedCount(
    "20.058M",
    "openvinotoolkit/open_model_zoo models/public/ssd-resnet34-1200-onnx/README.md (MParams)",
    config={"num_classes": 81},
    disagrees="19,972,534 here (backbone 8,170,304 = torchvision's ResNet-34 less conv5_x and "
    "fc; extra layers 3,574,400; heads 8,227,830, as MLPerf's ssd300.py defines them), 0.43% "
    "under the card's figure, whose counting (ONNX initialisers) it does not state",
)

register_model(
    "ssd_resnet34_300",
    family="object_detection",
    description="MLPerf's SSD: ResNet-34 to conv4_x + extra layers, 300x300, 8732 default boxes",
    task="DetectionTask",
    min_image_size=300,
    published=(PUBLISHED,),
    anchors="ssd_anchors",
)(ssd_resnet34)
