"""The Object Detection API's two-stage meta-architecture (Faster R-CNN, Ren et al. 2015) as its
TF2 model zoo builds it on a ResNet (faster_rcnn_resnet*_keras): an RPN on C4 (stride 16) over
a grid of 4 scales x 3 aspect ratios per location, 14x14 ROI crops max-pooled to 7x7, the
ResNet's own fifth stage as the box classifier, average pooling, and one class and one
class-agnostic box output. Composed on Model Garden's ResNet, RPN head, ROI generator, sampler,
aligner and detection generator; registered as faster_rcnn_resnet{50,101}_v1."""

from __future__ import annotations

import gin
import tensorflow as tf
import tf_keras
from official.vision.configs import backbones, common, decoders
from official.vision.configs import maskrcnn as maskrcnn_config
from official.vision.modeling.backbones import factory as backbone_factory
from official.vision.modeling.layers import nn_blocks

from models.core.errors import UsageError, check_choice
from models.core.registry import register_model
from models.data.anchors import GridAnchors
from models.tasks.nms import check_nms_version
from models.tasks.two_stage import PROPOSAL_NMS, build_two_stage

C4 = 4  # the RPN's and the ROI crops' level: the ResNet's fourth stage, stride 16
# Feature extractors by the API's names: Model Garden's ResNet v1.5 (same parameters as v1).
FEATURE_EXTRACTORS = {"resnet50_v1": 50, "resnet101_v1": 101, "resnet152_v1": 152}
STAGE5_BLOCKS = 3  # every ResNet's fifth stage


@gin.configurable
def faster_rcnn(
    num_classes: int = 91,
    image_size: int = 640,
    feature_extractor: str = "resnet50_v1",
    width_multiplier: float = 1.0,
    include_mask: bool = False,
    rpn_filters: int = 512,
    initial_crop_size: int = 14,
    maxpool_size: int = 2,
    pre_nms_top_k: int = 6000,
    num_proposals: int = 300,
    test_pre_nms_top_k: int = 6000,
    test_num_proposals: int = 300,
    rpn_nms_iou_threshold: float = 0.7,
    num_sampled_rois: int = 64,
    foreground_fraction: float = 0.25,
    pre_nms_score_threshold: float = 0.0,
    nms_iou_threshold: float = 0.6,
    max_num_detections: int = 300,
    nms_version: str = "v2",
    proposal_nms: str = "padded",
    use_sync_bn: bool = False,
    norm_momentum: float = 0.997,
    norm_epsilon: float = 1e-4,
) -> tf_keras.Model:
    """Faster R-CNN of `feature_extractor` (at `width_multiplier`): an RPN of one 3x3 conv of
    `rpn_filters` on C4 over the `grid_anchors`, `num_proposals` proposals by NMS
    at `rpn_nms_iou_threshold`, `num_sampled_rois` sampled in training, each cropped to
    `initial_crop_size` and max-pooled by `maxpool_size`, then the ResNet's fifth stage and
    average pooling; `num_classes` counts the background (COCO: 91). Defaults: the API's
    faster_rcnn_resnet50_v1_640x640_coco17_tpu-8 (`proposal_nms` and `nms_version` as Mask
    R-CNN's)."""
    depth = FEATURE_EXTRACTORS[
        check_choice(feature_extractor, FEATURE_EXTRACTORS, "faster_rcnn.feature_extractor")
    ]
    if include_mask:
        raise UsageError("faster_rcnn has no mask head: use mask_rcnn_resnet50_fpn for masks")
    anchors = GridAnchors()
    if anchors.min_level != C4 or anchors.max_level != C4:
        raise UsageError(
            f"faster_rcnn proposes on C4 only: grid_anchors.min_level and max_level must be {C4}"
        )
    anchors.check_image_size(image_size, "faster_rcnn.image_size")
    check_choice(proposal_nms, PROPOSAL_NMS, "faster_rcnn.proposal_nms")
    norm = common.NormActivation(
        activation="relu",
        use_sync_bn=use_sync_bn,
        norm_momentum=norm_momentum,
        norm_epsilon=norm_epsilon,
    )
    config = maskrcnn_config.MaskRCNN(
        num_classes=num_classes,
        input_size=[image_size, image_size, 3],
        **anchors.model_config_fields(maskrcnn_config.Anchor),
        include_mask=False,
        backbone=backbones.Backbone(
            type="resnet",
            resnet=backbones.ResNet(model_id=depth, depth_multiplier=width_multiplier),
        ),
        decoder=decoders.Decoder(type="identity"),
        norm_activation=norm,
        rpn_head=maskrcnn_config.RPNHead(num_convs=1, num_filters=rpn_filters),
        detection_head=maskrcnn_config.DetectionHead(class_agnostic_bbox_pred=True),
        roi_generator=maskrcnn_config.ROIGenerator(
            pre_nms_top_k=pre_nms_top_k,
            pre_nms_score_threshold=0.0,
            nms_iou_threshold=rpn_nms_iou_threshold,
            num_proposals=num_proposals,
            test_pre_nms_top_k=test_pre_nms_top_k,
            test_pre_nms_score_threshold=0.0,
            test_nms_iou_threshold=rpn_nms_iou_threshold,
            test_num_proposals=test_num_proposals,
            use_batched_nms=proposal_nms == "batched",
        ),
        roi_sampler=maskrcnn_config.ROISampler(
            num_sampled_rois=num_sampled_rois, foreground_fraction=foreground_fraction
        ),
        roi_aligner=maskrcnn_config.ROIAligner(crop_size=initial_crop_size),
        detection_generator=maskrcnn_config.DetectionGenerator(
            pre_nms_score_threshold=pre_nms_score_threshold,
            nms_iou_threshold=nms_iou_threshold,
            max_num_detections=max_num_detections,
            nms_version=check_nms_version(nms_version, "faster_rcnn.nms_version"),
        ),
        mask_head=None,
        mask_sampler=None,
        mask_roi_aligner=None,
    )
    head = StageFiveBoxHead(
        num_classes,
        filters=int(512 * width_multiplier),
        pool_size=maxpool_size,
        norm=norm.as_dict(),
    )
    return build_two_stage(config, backbone=c4_backbone(config), detection_head=head)


def c4_backbone(config: maskrcnn_config.MaskRCNN) -> tf_keras.Model:
    """Model Garden's ResNet up to its fourth stage (the fifth is the box classifier's)."""
    size = config.input_size
    resnet = backbone_factory.build_backbone(
        input_specs=tf_keras.layers.InputSpec(shape=[None, *size]),
        backbone_config=config.backbone,
        norm_activation_config=config.norm_activation,
    )
    level = str(C4)
    c4 = tf_keras.Model(resnet.inputs, {level: resnet.output[level]}, name="resnet_c4")
    c4.output_specs = {level: resnet.output_specs[level]}
    return c4


@tf_keras.utils.register_keras_serializable(package="tpu_pod_zoo")
class StageFiveBoxHead(tf_keras.layers.Layer):
    """The API's box classifier on a ResNet: each ROI's C4 crop max-pooled by `pool_size`,
    the fifth stage (3 bottleneck blocks of `filters`, the first with stride 2 and a
    projection), averaged over space, then class logits (`num_classes`) and one box for all
    classes (share_box_across_classes), as Model Garden's detection head returns them."""

    def __init__(
        self, num_classes: int, filters: int = 512, pool_size: int = 2, norm=None, **kwargs
    ):
        super().__init__(**kwargs)
        self._config = {
            "num_classes": num_classes,
            "filters": filters,
            "pool_size": pool_size,
            "norm": dict(norm or {}),
        }
        norm = self._config["norm"]
        self._pool = tf_keras.layers.MaxPool2D(pool_size, pool_size)
        self._blocks = [
            nn_blocks.BottleneckBlock(
                filters=filters,
                strides=2 if index == 0 else 1,
                use_projection=index == 0,
                activation=norm.get("activation", "relu"),
                use_sync_bn=norm.get("use_sync_bn", False),
                norm_momentum=norm.get("norm_momentum", 0.99),
                norm_epsilon=norm.get("norm_epsilon", 1e-3),
                name=f"block{index + 1}",
            )
            for index in range(STAGE5_BLOCKS)
        ]
        self._classifier = tf_keras.layers.Dense(
            num_classes,
            kernel_initializer=tf_keras.initializers.RandomNormal(stddev=0.01),
            name="class",
        )
        self._box = tf_keras.layers.Dense(
            4, kernel_initializer=tf_keras.initializers.RandomNormal(stddev=0.001), name="box"
        )

    def call(self, roi_features: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """[B, N, crop, crop, C] ROI features -> ([B, N, classes] logits, [B, N, 4] boxes)."""
        rois, crop = roi_features.shape[1], roi_features.shape[2:]  # static: NMS needs them
        x = self._pool(tf.reshape(roi_features, [-1, *crop]))
        for block in self._blocks:
            x = block(x)
        x = tf.reduce_mean(x, axis=[1, 2])
        classes = tf.reshape(self._classifier(x), [-1, rois, self._config["num_classes"]])
        return classes, tf.reshape(self._box(x), [-1, rois, 4])

    def get_config(self) -> dict:
        return {**super().get_config(), **self._config}


ZOO = {
    "faster_rcnn_resnet50_v1": "Faster R-CNN, ResNet-50 C4 RPN + stage-5 box classifier",
    "faster_rcnn_resnet101_v1": "Faster R-CNN, ResNet-101 C4 RPN + stage-5 box classifier",
}
for _name, _description in ZOO.items():
    register_model(
        _name,
        family="object_detection",
        description=_description,
        task="InstanceSegmentationTask",
        fixed={"feature_extractor": _name.removeprefix("faster_rcnn_"), "include_mask": False},
        min_image_size=128,
        anchors="grid_anchors",
    )(faster_rcnn)
