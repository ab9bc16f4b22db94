"""What sequence-to-sequence tasks (translation, speech recognition) share: the label-smoothed
cross-entropy of Tensor2Tensor and Model Garden and the teacher-forced token metrics, decoded ids
padded to one width so that every replica's batch gathers, and the decoded rows kept by example
id across evaluation steps."""

from __future__ import annotations

import numpy as np
import tensorflow as tf
import tf_keras


def smoothed_cross_entropy(labels: tf.Tensor, logits: tf.Tensor, smoothing: float) -> tf.Tensor:
    """Per-token cross-entropy against targets smoothed as Tensor2Tensor and Model Garden do
    (1 - smoothing on the label, the rest spread over the other tokens), less its minimum, so
    that a perfect prediction scores 0; float32."""
    logits = tf.cast(logits, tf.float32)
    vocab = tf.shape(logits)[-1]
    off = smoothing / tf.cast(vocab - 1, tf.float32)
    targets = tf.one_hot(labels, vocab, on_value=1.0 - smoothing, off_value=off)
    loss = tf.nn.softmax_cross_entropy_with_logits(labels=targets, logits=logits)
    if smoothing == 0:
        return loss
    floor = -(1.0 - smoothing) * np.log(1.0 - smoothing) - smoothing * tf.math.log(off)
    return loss - floor


def fixed_width(ids: tf.Tensor, width: int) -> tf.Tensor:
    """Decoded ids [batch, length] cut or padded with 0 to `width` (a beam search stops when
    its batch is done, so lengths differ between replicas)."""
    ids = ids[:, :width]
    ids = tf.pad(ids, [[0, 0], [0, width - tf.shape(ids)[1]]])
    return tf.ensure_shape(ids, [None, width])


def by_example(state: dict | None, ids, rows, padding_id: int) -> dict:
    """`state` ({example id: decoded row}, made on the first step) with one gathered step's
    rows added, those of padding examples (id `padding_id`) left out."""
    state = state if state is not None else {}
    for example, row in zip(ids, rows, strict=True):
        if example != padding_id:
            state[int(example)] = row
    return state


def token_metrics(training: bool) -> list[tf_keras.metrics.Metric]:
    """Teacher-forced token accuracy; evaluation also the unsmoothed loss a token."""
    accuracy = tf_keras.metrics.SparseCategoricalAccuracy("token_accuracy")
    return [accuracy] if training else [accuracy, tf_keras.metrics.Mean("loss")]


def token_loss(inputs: dict[str, tf.Tensor], logits: tf.Tensor, smoothing: float) -> tf.Tensor:
    """The smoothed cross-entropy averaged over this replica's target tokens (Model Garden's:
    a step averages the replicas' token means)."""
    weights = tf.cast(inputs["target_mask"], tf.float32)
    per_token = smoothed_cross_entropy(inputs["targets"], logits, smoothing)
    return tf.reduce_sum(per_token * weights) / tf.reduce_sum(weights)


def update_token_metrics(metrics: list, inputs: dict[str, tf.Tensor], logits: tf.Tensor) -> None:
    """Updates token_metrics' metrics (training: accuracy alone) with a batch's logits."""
    weights = tf.cast(inputs["target_mask"], tf.float32)
    metrics[0].update_state(inputs["targets"], logits, sample_weight=weights)
    if len(metrics) > 1:
        metrics[1].update_state(smoothed_cross_entropy(inputs["targets"], logits, 0.0), weights)
