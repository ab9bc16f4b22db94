"""Model Garden's single-stage anchor detector (a backbone, an FPN, a RetinaNet-style head
shared across levels and the multilevel detection generator) built from its parts' configs on
the `anchors` grid: RetinaNet, and the Object Detection API's SSD-FPN meta-architecture. The
head's class scores are sigmoids (trained with focal loss) or, per anchor, a softmax over the
classes with the background (SSD's hard-negative loss)."""

from __future__ import annotations

import gin
import tensorflow as tf
import tf_keras
from official.vision.configs import backbones, common, decoders
from official.vision.configs import retinanet as retinanet_config
from official.vision.modeling import factory, retinanet_model
from official.vision.modeling.backbones import factory as backbone_factory
from official.vision.modeling.layers import detection_generator as detection_generator_lib

from models.core.errors import check_choice
from models.data.anchors import Anchors
from models.tasks.nms import check_nms_version

# The score each class loss trains (models.tasks.detection.CLASS_LOSSES reads it).
CLASS_ACTIVATIONS = ("sigmoid", "softmax")
_EPSILON = 1e-7


@gin.configurable("detections")
def detection_settings(
    pre_nms_top_k: int = 5000,
    pre_nms_score_threshold: float = 0.05,
    nms_iou_threshold: float = 0.5,
    max_num_detections: int = 100,
    nms_version: str = "v2",
) -> retinanet_config.DetectionGenerator:
    """The NMS of a single-stage detector's outputs (Model Garden's retinanet_resnetfpn_coco
    defaults); `nms_version` picks Model Garden's NMS (models.tasks.nms)."""
    return retinanet_config.DetectionGenerator(
        pre_nms_top_k=pre_nms_top_k,
        pre_nms_score_threshold=pre_nms_score_threshold,
        nms_iou_threshold=nms_iou_threshold,
        max_num_detections=max_num_detections,
        nms_version=check_nms_version(nms_version, "detections.nms_version"),
    )


def build_single_stage(
    num_classes: int,
    image_size: int,
    backbone: backbones.Backbone,
    fpn: decoders.FPN,
    head: retinanet_config.RetinaNetHead,
    norm_activation: common.NormActivation,
    generator: retinanet_config.DetectionGenerator,
    class_activation: str = "sigmoid",
    owner: str = "model",
) -> tf_keras.Model:
    """Model Garden's RetinaNetModel of these parts over the `anchors` levels; `num_classes`
    counts the background. The model carries `retinanet_config` (what Model Garden's own task
    needs to build the same net) and `class_activation`."""
    anchors = Anchors()
    anchors.check_image_size(image_size, f"{owner}.image_size")
    check_choice(class_activation, CLASS_ACTIVATIONS, f"{owner}.class_activation")
    config = retinanet_config.RetinaNet(
        num_classes=num_classes,
        input_size=[image_size, image_size, 3],
        **anchors.model_config_fields(retinanet_config.Anchor),
        backbone=backbone,
        decoder=decoders.Decoder(type="fpn", fpn=fpn),
        head=head,
        detection_generator=generator,
        norm_activation=norm_activation,
    )
    input_specs = tf_keras.layers.InputSpec(shape=[None, image_size, image_size, 3])
    model = factory.build_retinanet(
        input_specs, config, backbone=_pyramid_backbone(input_specs, config)
    )
    if class_activation == "softmax":
        model = _with_generator(model, detection_generator(class_activation, generator))
    model.retinanet_config = config
    model.class_activation = class_activation
    return model


def _pyramid_backbone(
    input_specs: tf_keras.layers.InputSpec, config: retinanet_config.RetinaNet
) -> tf_keras.Model:
    """Model Garden's backbone with only the levels a decoder reads (`output_specs`): its
    MobileNets also return the final 1x1 convolution, which no decoder takes and which would
    otherwise be built, run and counted without a gradient."""
    backbone = backbone_factory.build_backbone(
        input_specs=input_specs,
        backbone_config=config.backbone,
        norm_activation_config=config.norm_activation,
    )
    outputs = {
        level: out for level, out in backbone.output.items() if level in backbone.output_specs
    }
    if len(outputs) == len(backbone.output):
        return backbone
    pruned = tf_keras.Model(backbone.inputs, outputs, name=backbone.name)
    pruned.output_specs = backbone.output_specs
    return pruned


def _with_generator(
    model: retinanet_model.RetinaNetModel, generator: tf_keras.layers.Layer
) -> retinanet_model.RetinaNetModel:
    """The same backbone, decoder, head and anchor grid with another detection generator."""
    config = model.get_config()
    parts = ("backbone", "decoder", "head", "detection_generator")
    grid = {key: value for key, value in config.items() if key not in parts}
    return retinanet_model.RetinaNetModel(
        model.backbone, model.decoder, model.head, generator, **grid
    )


def detection_generator(
    class_activation: str, settings: retinanet_config.DetectionGenerator | None = None
) -> detection_generator_lib.MultilevelDetectionGenerator:
    """Model Garden's multilevel generator with the `detections` settings, for sigmoid
    scores, or SoftmaxDetectionGenerator for softmax ones."""
    settings = settings or detection_settings()
    kind = (
        SoftmaxDetectionGenerator
        if class_activation == "softmax"
        else detection_generator_lib.MultilevelDetectionGenerator
    )
    return kind(
        pre_nms_top_k=settings.pre_nms_top_k,
        pre_nms_score_threshold=settings.pre_nms_score_threshold,
        nms_iou_threshold=settings.nms_iou_threshold,
        max_num_detections=settings.max_num_detections,
        nms_version=settings.nms_version,
    )


@tf_keras.utils.register_keras_serializable(package="tpu_pod_zoo")
class SoftmaxDetectionGenerator(detection_generator_lib.MultilevelDetectionGenerator):
    """Model Garden's multilevel generator for a head trained with a softmax (SSD): each
    anchor's class logits become the softmax probabilities, passed on as the logits whose
    sigmoid they are, so that the generator's own sigmoid, background removal, box decoding and
    NMS score them unchanged."""

    def __call__(self, raw_boxes, raw_scores, anchor_boxes, image_shape, raw_attributes=None):
        scores = {
            level: softmax_as_logits(raw_scores[level], raw_boxes[level].shape[-1] // 4)
            for level in raw_scores
        }
        return super().__call__(raw_boxes, scores, anchor_boxes, image_shape, raw_attributes)


def softmax_as_logits(logits: tf.Tensor, anchors_per_location: int) -> tf.Tensor:
    """[B, H, W, A * C] logits -> the same shape holding log(p / (1 - p)) of each anchor's
    softmax p over its C classes: sigmoid of it is p."""
    shape = tf.shape(logits)
    per_anchor = tf.reshape(logits, [shape[0], shape[1], shape[2], anchors_per_location, -1])
    probabilities = tf.clip_by_value(tf.nn.softmax(per_anchor), _EPSILON, 1.0 - _EPSILON)
    odds = tf.math.log(probabilities) - tf.math.log1p(-probabilities)
    return tf.reshape(odds, shape)
