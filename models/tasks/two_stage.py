"""Model Garden's two-stage detector (a backbone, an optional feature pyramid, the RPN, ROI
align, a box head and, for Mask R-CNN, a mask head) built from its MaskRCNN config: Mask R-CNN
and Faster R-CNN with FPN, and the Object Detection API's Faster R-CNN on C4."""

from __future__ import annotations

import tensorflow as tf
import tf_keras
from official.vision.configs import maskrcnn as maskrcnn_config
from official.vision.modeling import factory, maskrcnn_model
from official.vision.modeling.backbones import factory as backbone_factory
from official.vision.modeling.decoders import fpn

RESNET_MAX_LEVEL = 5  # C5, stride 32: the backbone's last level
# The proposals' NMS: Model Garden's padded NMS (XLA, TPU) or combined NMS (CPU and GPU only).
PROPOSAL_NMS = ("padded", "batched")


def build_two_stage(
    config: maskrcnn_config.MaskRCNN,
    pooled_top: bool = False,
    backbone: tf_keras.Model | None = None,
    detection_head: tf_keras.layers.Layer | None = None,
) -> tf_keras.Model:
    """Model Garden's network for `config` (with `pooled_top`, its FPN stops at C5's level and
    max pooling makes the levels above), on `backbone` and with `detection_head` where given,
    its heads built by one symbolic call (as its MaskRCNNTask.build_model does), so that every
    weight exists before training."""
    size = config.input_size
    specs = tf_keras.layers.InputSpec(shape=[None, *size])
    backbone = backbone or backbone_factory.build_backbone(
        input_specs=specs,
        backbone_config=config.backbone,
        norm_activation_config=config.norm_activation,
    )
    pooled = pooled_top and config.max_level > RESNET_MAX_LEVEL
    decoder = pooled_fpn(backbone, config) if pooled else None
    model = factory.build_maskrcnn(specs, config, backbone=backbone, decoder=decoder)
    if detection_head is not None:
        parts = model.get_config() | {"detection_head": detection_head}
        model = maskrcnn_model.MaskRCNNModel(**parts)

    # Plain TensorFlow: AutoGraph's conversion of Model Garden's heads added ~12 s a build.
    @tf.autograph.experimental.do_not_convert
    def symbolic_call():
        model(tf_keras.Input(size), image_shape=tf_keras.Input([2]), training=False)

    symbolic_call()
    return model


def pooled_fpn(backbone: tf_keras.Model, config: maskrcnn_config.MaskRCNN) -> tf_keras.Model:
    """Model Garden's FPN up to C5's level, each level above it a stride-2 subsampling of the
    one below (max pooling with a 1x1 window: the FPN paper's P6, no parameters)."""
    top = min(config.max_level, RESNET_MAX_LEVEL)
    pyramid = fpn.build_fpn_decoder(backbone.output_specs, config.replace(max_level=top))
    inputs = {level: tf_keras.Input(shape[1:]) for level, shape in backbone.output_specs.items()}
    features = dict(pyramid(inputs))
    for level in range(top + 1, config.max_level + 1):
        pool = tf_keras.layers.MaxPool2D(pool_size=1, strides=2, name=f"p{level}_subsample")
        features[str(level)] = pool(features[str(level - 1)])
    return tf_keras.Model(inputs, features, name="fpn_pooled_top")
