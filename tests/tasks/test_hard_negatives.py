"""SSD's hard-negative softmax loss against a direct numpy computation."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from models.tasks.hard_negatives import hard_negative_softmax_loss


def _numpy_loss(logits, classes, weights, ratio, min_negatives):
    """Per image: cross-entropy summed over positives and the `ratio` x positives negatives of
    highest cross-entropy (at least `min_negatives`), ignored anchors left out."""
    shifted = logits - logits.max(-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    losses = []
    for image in range(len(logits)):
        ce = -log_probs[image, np.arange(logits.shape[1]), classes[image]]
        counted = weights[image] > 0
        positive = counted & (classes[image] > 0)
        negatives = np.sort(ce[counted & (classes[image] == 0)])[::-1]
        keep = int(max(min_negatives, ratio * positive.sum()))
        losses.append(ce[positive].sum() + negatives[:keep].sum())
    return np.array(losses)


def test_keeps_the_positives_and_the_hardest_negatives_per_image():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(3, 40, 5)).astype(np.float32)
    classes = np.zeros((3, 40), np.int32)
    classes[0, [3, 7]] = [2, 4]  # two positives: six negatives kept
    classes[1, 10:25] = 1  # 15 positives, 25 negatives: all kept
    weights = np.ones((3, 40), np.float32)
    weights[0, :5] = 0  # ignored anchors, a positive among them
    for ratio, min_negatives in ((3.0, 0), (1.0, 4)):  # image 2 has no objects
        got = hard_negative_softmax_loss(logits, classes, weights, ratio, min_negatives)
        want = _numpy_loss(logits, classes, weights, ratio, min_negatives)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5)
    assert float(hard_negative_softmax_loss(logits, classes, weights)[2]) == 0.0


def test_compiles_with_xla():
    logits = tf.random.normal([2, 30, 4], seed=1)
    classes = tf.constant([[1] * 3 + [0] * 27, [0] * 30])
    loss = tf.function(hard_negative_softmax_loss, jit_compile=True)
    eager = hard_negative_softmax_loss(logits, classes, tf.ones([2, 30]))
    np.testing.assert_allclose(loss(logits, classes, tf.ones([2, 30])), eager, rtol=1e-5)
