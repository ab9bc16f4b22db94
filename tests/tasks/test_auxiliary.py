"""Auxiliary heads (Inception, AmoebaNet-D): the shared task adds their weighted loss in
training; prediction, evaluation and export see the main logits only."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from models.tasks.auxiliary import AuxiliaryLogits
from models.tasks.image_classification import ImageClassificationTask

CLASSES = 1000  # classification_input's default (ImageNet)


def _model() -> AuxiliaryLogits:
    inputs = tf_keras.Input((4,))
    hidden = tf_keras.layers.Dense(8, activation="relu")(inputs)
    logits = tf_keras.layers.Dense(CLASSES, name="logits")(hidden)
    aux = tf_keras.layers.Dense(CLASSES, name="aux_logits")(hidden)
    network = tf_keras.Model(inputs, logits)
    model = AuxiliaryLogits(network, tf_keras.Model(inputs, [logits, aux]))
    model.build((None, 4))
    return model


def _cross_entropy(labels, logits, smoothing: float) -> np.ndarray:
    one_hot = tf.one_hot(labels, CLASSES)
    return tf_keras.losses.categorical_crossentropy(
        one_hot, logits, from_logits=True, label_smoothing=smoothing
    ).numpy()


@pytest.mark.parametrize("weight", [0.4, 0.0])
def test_training_loss_adds_the_weighted_auxiliary_loss(weight, digits_dir):
    task = ImageClassificationTask(
        model="unused", data_dir=digits_dir, label_smoothing=0.1, aux_loss_weight=weight
    )
    model = _model()
    images, labels = tf.random.stateless_normal([6, 4], seed=[1, 2]), tf.range(6)
    logits, per_example = task.per_example_loss(model, None, images, labels)
    main, aux = model.logits_and_aux(images, training=True)
    expected = _cross_entropy(labels, main, 0.1) + weight * _cross_entropy(labels, aux, 0.1)
    np.testing.assert_allclose(per_example.numpy(), expected, rtol=1e-5)
    np.testing.assert_allclose(logits.numpy(), main.numpy())


def test_auxiliary_head_trains_but_never_predicts(digits_dir):
    model = _model()
    assert model.has_aux_head and model(tf.ones([3, 4])).shape == (3, CLASSES)  # main only
    assert {w.name for w in model.trainable_weights} >= {"aux_logits/kernel:0"}
    task = ImageClassificationTask(model="unused", data_dir=digits_dir)
    images, labels = tf.ones([2, 4]), tf.constant([1, 2])
    with tf.GradientTape() as tape:
        _, per_example = task.per_example_loss(model, None, images, labels)
    aux_kernel = model.aux_network.get_layer("aux_logits").kernel
    assert tape.gradient(per_example, aux_kernel) is not None
