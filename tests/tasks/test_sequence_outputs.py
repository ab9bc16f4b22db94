"""What the sequence-to-sequence tasks share (models/tasks/sequence_outputs.py): label smoothing
as Model Garden's translation task computes it, decoded ids of one width, rows kept by id."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf
from official.nlp.tasks.translation import _padded_cross_entropy_loss

from models.tasks.sequence_outputs import by_example, fixed_width, smoothed_cross_entropy


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_smoothed_loss_is_model_gardens(smoothing):
    logits = tf.random.stateless_normal([3, 5, 11], [0, 1])
    labels = tf.random.stateless_uniform([3, 5], [0, 2], 1, 11, tf.int32)
    ours = smoothed_cross_entropy(labels, logits, smoothing)
    theirs, weights = _padded_cross_entropy_loss(logits, labels, smoothing, 11)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-5)
    assert float(tf.reduce_min(weights)) == 1.0


def test_decoded_ids_are_cut_or_padded_to_one_width():
    short, long = tf.constant([[5, 1]]), tf.constant([[5, 6, 7, 8, 1]])
    assert fixed_width(short, 4).numpy().tolist() == [[5, 1, 0, 0]]
    assert fixed_width(long, 4).numpy().tolist() == [[5, 6, 7, 8]]


def test_rows_are_kept_by_id_without_padding():
    state = by_example(None, np.array([2, -1]), ["b", "pad"], -1)
    state = by_example(state, np.array([0, 1]), ["x", "y"], -1)
    assert state == {2: "b", 0: "x", 1: "y"}
