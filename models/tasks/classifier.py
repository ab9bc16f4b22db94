"""A backbone + global-pool/dropout/dense head, the classifier shape every image family shares."""

from __future__ import annotations

from collections.abc import Callable

import tf_keras
from official.vision.modeling import classification_model


def image_input_specs(image_size: int) -> tf_keras.layers.InputSpec:
    """Static-shape RGB input of image_size x image_size (XLA and TPU want static shapes)."""
    return tf_keras.layers.InputSpec(shape=[None, image_size, image_size, 3])


def classifier(
    backbone_fn: Callable[..., tf_keras.Model],
    image_size: int,
    num_classes: int,
    dropout_rate: float = 0.0,
    kernel_initializer: str = "random_normal",
    **backbone_args,
) -> tf_keras.Model:
    """`backbone_fn(input_specs=..., **backbone_args)` under Model Garden's classification head
    (global average pool, dropout, dense logits)."""
    input_specs = image_input_specs(image_size)
    return classification_model.ClassificationModel(
        backbone_fn(input_specs=input_specs, **backbone_args),
        num_classes=num_classes,
        input_specs=input_specs,
        dropout_rate=dropout_rate,
        kernel_initializer=kernel_initializer,
    )
