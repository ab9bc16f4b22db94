"""Inception preprocessing's colour distortion (classification_input.color_distortion)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from models.data.color import distort_color

SEEDS = [tf.constant([0, s], tf.int64) for s in range(16)]


def _colourful() -> tf.Tensor:
    pixels = tf.random.stateless_uniform([8, 8, 3], [3, 4], 0.0, 255.0)
    return tf.round(pixels)


def test_none_is_identity():
    image = _colourful()
    np.testing.assert_array_equal(distort_color(image, "none", SEEDS[0]), image)


@pytest.mark.parametrize("mode", ["brightness_chroma", "slim_fast", "slim_full"])
def test_stays_in_range_reproducible_and_varies_with_the_seed(mode):
    image = _colourful()
    outputs = [distort_color(image, mode, seed).numpy() for seed in SEEDS]
    assert all(o.min() >= 0.0 and o.max() <= 255.0 and o.shape == (8, 8, 3) for o in outputs)
    np.testing.assert_array_equal(distort_color(image, mode, SEEDS[0]), outputs[0])
    assert len({o.tobytes() for o in outputs}) == len(SEEDS)


def test_slim_fast_mode_shifts_a_grey_image_by_one_brightness_delta():
    # Saturation leaves grey pixels grey, so fast mode (brightness, then saturation) adds the
    # same brightness delta, at most 32 of 255, to every pixel.
    grey = tf.tile(tf.reshape(tf.linspace(64.0, 192.0, 64), [8, 8, 1]), [1, 1, 3])
    for seed in SEEDS:
        shift = distort_color(grey, "slim_fast", seed).numpy() - grey.numpy()
        np.testing.assert_allclose(shift, shift.flat[0], atol=1e-3)
        assert abs(shift.flat[0]) <= 32.0 + 1e-3


def test_slim_full_mode_changes_hue():
    image = _colourful()
    hues = [
        tf.image.rgb_to_hsv(distort_color(image, "slim_full", s) / 255.0)[..., 0] for s in SEEDS
    ]
    original = tf.image.rgb_to_hsv(image / 255.0)[..., 0]
    assert any(not np.allclose(h, original, atol=1e-2) for h in hues)


def test_brightness_chroma_is_one_brightness_and_chroma_shift_in_the_references_ranges():
    # distort_color_fast: every pixel of a channel moves by the same offset, d + M (cb, cr)
    # with M the YCbCr->RGB chroma columns; |d| <= 32/255, |cb|, |cr| <= 0.1. Mid-grey: no clip.
    grey = tf.fill([4, 4, 3], 128.0)
    mix = np.array([[1.0, 0.0, 1.402], [1.0, -0.344136, -0.714136], [1.0, 1.772, 0.0]])
    for seed in SEEDS:
        shift = (distort_color(grey, "brightness_chroma", seed) - grey).numpy() / 255.0
        np.testing.assert_allclose(shift, np.broadcast_to(shift[0, 0], shift.shape), atol=1e-6)
        brightness, cb, cr = np.linalg.solve(mix, shift[0, 0])
        assert abs(brightness) <= 32 / 255 + 1e-5 and max(abs(cb), abs(cr)) <= 0.1 + 1e-5
