"""SSD's classification loss (Liu et al. 2016): softmax cross-entropy over the positive anchors
and only the hardest negatives, at most `negatives_per_positive` of them per positive in each
image. Model Garden has focal loss only; the Object Detection API and MLPerf's SSD use this."""

from __future__ import annotations

import tensorflow as tf


def hard_negative_softmax_loss(
    logits: tf.Tensor,
    classes: tf.Tensor,
    weights: tf.Tensor,
    negatives_per_positive: float = 3.0,
    min_negatives: int = 0,
) -> tf.Tensor:
    """Summed cross-entropy of each image's positives and hardest negatives, [batch].

    `logits` [batch, anchors, classes] (class 0 the background), `classes` [batch, anchors]
    the anchors' targets, `weights` [batch, anchors] 0 for anchors the labeler ignores. An
    image keeps its `max(min_negatives, negatives_per_positive * positives)` negatives of
    highest loss (MLPerf's SSD: 3 per positive, none in an image without objects). Static
    shapes throughout (a rank by two sorts), so that XLA compiles it."""
    classes = tf.cast(classes, tf.int32)
    counted = tf.cast(weights, tf.float32) > 0
    loss = tf.nn.sparse_softmax_cross_entropy_with_logits(classes, tf.cast(logits, tf.float32))
    positive = counted & (classes > 0)
    negative = counted & (classes == 0)
    positives = tf.reduce_sum(tf.cast(positive, tf.float32), axis=1, keepdims=True)
    wanted = tf.maximum(float(min_negatives), negatives_per_positive * positives)
    negative_loss = tf.where(negative, loss, -1.0)  # cross-entropy >= 0: others rank last
    order = tf.argsort(negative_loss, axis=1, direction="DESCENDING")
    rank = tf.cast(tf.argsort(order, axis=1), tf.float32)
    hard = negative & (rank < wanted)
    kept = tf.cast(positive | hard, tf.float32)
    return tf.reduce_sum(loss * kept, axis=1)
