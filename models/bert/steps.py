"""The pieces BERT's tasks share: a fine-tuning model on a registered encoder, float32
cross-entropy, the sequence-length check and one optimiser step."""

from __future__ import annotations

from collections.abc import Callable

import tensorflow as tf
import tf_keras

from models.bert.model import INPUTS
from models.core import registry
from models.core.errors import UsageError

ACCURACY = tf_keras.metrics.SparseCategoricalAccuracy


def cross_entropy(labels: tf.Tensor, logits: tf.Tensor) -> tf.Tensor:
    """Per-example softmax cross-entropy in float32 (labels < 0, padding, count as class 0)."""
    return tf_keras.losses.sparse_categorical_crossentropy(
        tf.maximum(labels, 0), tf.cast(logits, tf.float32), from_logits=True
    )


def check_length(model: tf_keras.Model, seq_length: int, owner: str) -> None:
    """UsageError when the input's sequences are longer than the model's position table."""
    positions = model.encoder.get_config()["max_sequence_length"]
    if seq_length > positions:
        raise UsageError(
            f"{owner}.seq_length = {seq_length} is longer than the model's "
            f"{positions} positions (bert_encoder.max_sequence_length)"
        )


def apply_gradients(model, optimizer, tape: tf.GradientTape, loss: tf.Tensor) -> None:
    """One optimiser step on the model's trainable weights."""
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))


def fine_tuning_model(
    variant: str,
    vocab_size: int,
    head: Callable[[tf_keras.Model], tf_keras.Model],
    seq_length: int,
    owner: str,
) -> tf_keras.Model:
    """head(the registered variant's encoder), checked against the input's sequence length
    (`owner`: its gin name) and built."""
    model = head(registry.create_model(variant, vocab_size=vocab_size).encoder)
    check_length(model, seq_length, owner)
    model(dict.fromkeys(INPUTS, tf.zeros([1, 2], tf.int32)))
    return model
