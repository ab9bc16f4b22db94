"""Gin-configurable Mask R-CNN builder (Model Garden's ResNet backbone, FPN, RPN, ROI align,
box and mask heads, ROI sampling and detection generator), registered as
mask_rcnn_resnet{18,50}_fpn and, the same network without its mask branch, as
faster_rcnn_resnet{18,50}_fpn."""

from __future__ import annotations

import gin
import tf_keras
from official.vision.configs import backbones, common, decoders
from official.vision.configs import maskrcnn as maskrcnn_config

from models.core.errors import check_choice
from models.core.registry import PublishedCount, register_model
from models.data.anchors import RpnAnchors
from models.tasks.nms import check_nms_version
from models.tasks.two_stage import PROPOSAL_NMS, build_two_stage

DEPTHS = (18, 50)
COARSER_LEVELS = ("max_pool", "conv")


@gin.configurable
def mask_rcnn(
    num_classes: int = 91,
    image_size: int = 1024,
    include_mask: bool = True,
    depth: int = 50,
    width_multiplier: float = 1.0,
    fpn_filters: int = 256,
    rpn_convs: int = 1,
    rpn_filters: int = 256,
    box_head_convs: int = 4,
    box_head_filters: int = 256,
    box_head_fcs: int = 1,
    box_head_fc_dims: int = 1024,
    mask_head_convs: int = 4,
    mask_head_filters: int = 256,
    roi_crop_size: int = 7,
    mask_roi_crop_size: int = 14,
    pre_nms_top_k: int = 2000,
    num_proposals: int = 1000,
    test_pre_nms_top_k: int = 1000,
    test_num_proposals: int = 1000,
    num_sampled_rois: int = 512,
    foreground_fraction: float = 0.25,
    num_sampled_masks: int = 128,
    pre_nms_score_threshold: float = 0.05,
    nms_iou_threshold: float = 0.5,
    max_num_detections: int = 100,
    nms_version: str = "v2",
    proposal_nms: str = "padded",
    coarser_levels: str = "max_pool",
    use_sync_bn: bool = False,
    norm_momentum: float = 0.997,
    norm_epsilon: float = 1e-4,
) -> tf_keras.Model:
    """Mask R-CNN (He et al. 2017) on a ResNet-`depth` v1.5 backbone with FPN over the
    `rpn_anchors` levels; `include_mask=False` is Faster R-CNN. `num_classes` counts the
    background (COCO: 91). Masks are `mask_roi_crop_size` x 2 on a side (28). Pyramid levels
    above C5 (P6) are `coarser_levels`: "max_pool" (stride-2 subsampling, as the FPN paper,
    the Cloud TPU Mask R-CNN reference and Detectron make P6) or "conv" (a stride-2 3x3
    convolution, as Model Garden's FPN does for RetinaNet and for its Mask R-CNN). Other
    defaults: Model Garden's maskrcnn_resnetfpn_coco (a 4-conv + 1-fc box head). `nms_version`
    is the final detections' NMS (models.tasks.nms); `proposal_nms` the proposals', part of the
    train step: "padded" (Model Garden's, which XLA compiles) or "batched" (combined NMS, CPU
    and GPU)."""
    anchors = RpnAnchors()
    anchors.check_image_size(image_size, "mask_rcnn.image_size")
    check_choice(coarser_levels, COARSER_LEVELS, "mask_rcnn.coarser_levels")
    check_choice(proposal_nms, PROPOSAL_NMS, "mask_rcnn.proposal_nms")
    heads = {
        "rpn_head": maskrcnn_config.RPNHead(num_convs=rpn_convs, num_filters=rpn_filters),
        "detection_head": maskrcnn_config.DetectionHead(
            num_convs=box_head_convs,
            num_filters=box_head_filters,
            num_fcs=box_head_fcs,
            fc_dims=box_head_fc_dims,
        ),
        "roi_generator": maskrcnn_config.ROIGenerator(
            pre_nms_top_k=pre_nms_top_k,
            num_proposals=num_proposals,
            test_pre_nms_top_k=test_pre_nms_top_k,
            test_num_proposals=test_num_proposals,
            use_batched_nms=proposal_nms == "batched",
        ),
        "roi_sampler": maskrcnn_config.ROISampler(
            num_sampled_rois=num_sampled_rois, foreground_fraction=foreground_fraction
        ),
        "roi_aligner": maskrcnn_config.ROIAligner(crop_size=roi_crop_size),
        "detection_generator": maskrcnn_config.DetectionGenerator(
            pre_nms_score_threshold=pre_nms_score_threshold,
            nms_iou_threshold=nms_iou_threshold,
            max_num_detections=max_num_detections,
            nms_version=check_nms_version(nms_version, "mask_rcnn.nms_version"),
        ),
    }
    masks = {
        "mask_head": maskrcnn_config.MaskHead(
            num_convs=mask_head_convs, num_filters=mask_head_filters
        ),
        "mask_sampler": maskrcnn_config.MaskSampler(num_sampled_masks=num_sampled_masks),
        "mask_roi_aligner": maskrcnn_config.MaskROIAligner(crop_size=mask_roi_crop_size),
    }
    config = maskrcnn_config.MaskRCNN(
        num_classes=num_classes,
        input_size=[image_size, image_size, 3],
        **anchors.model_config_fields(maskrcnn_config.Anchor),
        include_mask=include_mask,
        backbone=backbones.Backbone(
            type="resnet",
            resnet=backbones.ResNet(model_id=depth, depth_multiplier=width_multiplier),
        ),
        decoder=decoders.Decoder(type="fpn", fpn=decoders.FPN(num_filters=fpn_filters)),
        norm_activation=common.NormActivation(
            activation="relu",
            use_sync_bn=use_sync_bn,
            norm_momentum=norm_momentum,
            norm_epsilon=norm_epsilon,
        ),
        **heads,
        **(masks if include_mask else dict.fromkeys(masks)),
    )
    return build_two_stage(config, pooled_top=coarser_levels == "max_pool")


# torchvision's maskrcnn_resnet50_fpn and fasterrcnn_resnet50_fpn (COCO_V1 model cards,
# num_params at 91 classes) with the box head as theirs: no convs, two 1024-unit fcs
# (TwoMLPHead). Kernel for kernel and bias for bias the backbone, FPN laterals and outputs
# (P6 max-pooled from P5 in both), RPN head, box head and predictor, and mask head (4 convs,
# 2x2 transposed conv, 1x1 logits) are the same; Model Garden adds BN (torchvision's
# detectors have none to learn), hence "without_bn".
_TORCHVISION_HEAD = {"num_classes": 91, "box_head_convs": 0, "box_head_fcs": 2}


def _torchvision(figure: str, weights: str) -> PublishedCount:
    """torchvision's model card figure, compared with its box head, without BN."""
    source = f"torchvision {weights}_ResNet50_FPN_Weights.COCO_V1 model card (num_params)"
    return PublishedCount(figure, source, counting="without_bn", config=_TORCHVISION_HEAD)


PUBLISHED = {
    ("mask_rcnn", 50): _torchvision("44,401,393", "MaskRCNN"),
    ("faster_rcnn", 50): _torchvision("41,755,286", "FasterRCNN"),
}
KINDS = {
    "mask_rcnn": (
        True,
        "Mask R-CNN, ResNet-{} v1.5 + FPN (P2-P6), RPN, ROI align, box + mask heads",
    ),
    "faster_rcnn": (False, "Faster R-CNN, ResNet-{} v1.5 + FPN (P2-P6), RPN, ROI align, box head"),
}

for _kind, (_masks, _description) in KINDS.items():
    for _depth in DEPTHS:
        _figure = PUBLISHED.get((_kind, _depth))
        register_model(
            f"{_kind}_resnet{_depth}_fpn",
            family="mask_rcnn",
            description=_description.format(_depth),
            task="InstanceSegmentationTask",
            fixed={"depth": _depth, "include_mask": _masks},
            min_image_size=128,
            published=(_figure,) if _figure else (),
        )(mask_rcnn)
