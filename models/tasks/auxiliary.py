"""Classifiers with an auxiliary head: trained with its loss, evaluated and exported without it.

Inception (TF-slim's AuxLogits) and AmoebaNet-D train a second softmax on an intermediate
grid; `ImageClassificationTask` adds its loss (`aux_loss_weight`) when a model is one of these.
"""

from __future__ import annotations

import tensorflow as tf
import tf_keras


class AuxiliaryLogits(tf_keras.Model):
    """Returns the main logits; `logits_and_aux` also returns the auxiliary head's (None without
    one), from a second functional view of the same layers, so eval and export never compute it.
    """

    def __init__(
        self, network: tf_keras.Model, aux_network: tf_keras.Model | None = None, **kwargs
    ):
        super().__init__(**kwargs)
        self.network, self.aux_network = network, aux_network
        self.has_aux_head = aux_network is not None

    def logits_and_aux(self, images, training=None) -> tuple[tf.Tensor, tf.Tensor | None]:
        if self.aux_network is None:
            return self.network(images, training=training), None
        logits, aux = self.aux_network(images, training=training)
        return logits, aux

    def call(self, images, training=None):
        return self.network(images, training=training)

    def get_config(self) -> dict:
        """Name only: the model is rebuilt from its gin configuration, not from a config."""
        return {"name": self.name}
