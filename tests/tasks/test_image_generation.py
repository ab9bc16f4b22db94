"""The GAN objectives of the image-generation task, against their formulas."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from models.tasks import image_generation as gan

REAL = tf.constant([2.0, -1.0, 0.5])
FAKE = tf.constant([-3.0, 0.0, 1.5])


def _softplus(x):
    return np.log1p(np.exp(x))


@pytest.mark.parametrize(
    "loss, d_expected, g_expected",
    [
        (
            "non_saturating",
            _softplus(-REAL.numpy()) + _softplus(FAKE.numpy()),
            _softplus(-FAKE.numpy()),
        ),
        ("wasserstein", FAKE.numpy() - REAL.numpy(), -FAKE.numpy()),
        (
            "hinge",
            np.maximum(0, 1 - REAL.numpy()) + np.maximum(0, 1 + FAKE.numpy()),
            -FAKE.numpy(),
        ),
    ],
)
def test_losses_match_their_formulas(loss, d_expected, g_expected):
    np.testing.assert_allclose(gan.discriminator_loss(loss, REAL, FAKE), d_expected, rtol=1e-6)
    np.testing.assert_allclose(gan.generator_loss(loss, FAKE), g_expected, rtol=1e-6)


def test_least_squares_pushes_real_sigmoids_to_one_and_fake_ones_to_zero():
    sig = tf.sigmoid
    expected = 0.5 * ((sig(REAL) - 1) ** 2 + sig(FAKE) ** 2)
    np.testing.assert_allclose(gan.discriminator_loss("least_squares", REAL, FAKE), expected)
    np.testing.assert_allclose(
        gan.generator_loss("least_squares", FAKE), 0.5 * (sig(FAKE) - 1) ** 2
    )


def test_orthogonal_penalty_is_zero_for_orthonormal_columns_and_counts_off_diagonals():
    q, _ = np.linalg.qr(np.random.default_rng(0).normal(size=(6, 4)))
    orthonormal = tf.Variable(q * 3.0, name="kernel")  # scaled: only the off-diagonal counts
    assert float(gan.orthogonal_penalty([orthonormal])) == pytest.approx(0.0, abs=1e-4)
    ones = tf.Variable(np.ones((2, 3, 1, 2), np.float32), name="conv/kernel")
    # W is [6, 2] of ones: W^T W = 6 everywhere, two off-diagonal entries of 36 each.
    assert float(gan.orthogonal_penalty([ones])) == pytest.approx(72.0)
    bias = tf.Variable(np.ones((4,), np.float32), name="bias")
    assert float(gan.orthogonal_penalty([bias])) == 0.0
