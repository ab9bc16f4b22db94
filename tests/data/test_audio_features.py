"""The speech front end: log-mel features equal a direct numpy computation (numpy's FFT and an
HTK mel filterbank written here) on a 1 kHz tone, whose energy peaks in the mel bin that holds
1 kHz; frame counts, per-utterance normalisation, and SpecAugment's masks."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from models.data.audio_features import (
    LOWER_HERTZ,
    NUM_BINS,
    features,
    log_mel,
    normalise_utterance,
    num_frames,
    pcm_to_float,
    spec_augment,
)

RATE, FRAME, STEP, FFT = 16000, 400, 160, 512


def hertz_to_mel(hertz):
    return 1127.0 * np.log1p(np.asarray(hertz) / 700.0)


def mel_filterbank(bins: int = NUM_BINS, low: float = LOWER_HERTZ) -> np.ndarray:
    """[FFT // 2 + 1, bins] triangles spaced evenly in HTK mel from `low` to 8 kHz, each
    rising from one band edge to the next and falling to the one after (the DC bin unused)."""
    mels = hertz_to_mel(np.linspace(0.0, RATE / 2, FFT // 2 + 1))
    edges = np.linspace(hertz_to_mel(low), hertz_to_mel(RATE / 2), bins + 2)
    lower, center, upper = edges[:-2], edges[1:-1], edges[2:]
    rising = (mels[:, None] - lower) / (center - lower)
    falling = (upper - mels[:, None]) / (upper - center)
    weights = np.maximum(0.0, np.minimum(rising, falling))
    weights[0] = 0.0
    return weights


def numpy_log_mel(samples: np.ndarray) -> np.ndarray:
    count = 1 + (len(samples) - FRAME) // STEP
    frames = np.stack([samples[i * STEP : i * STEP + FRAME] for i in range(count)])
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(FRAME) / FRAME)  # periodic Hann
    power = np.abs(np.fft.rfft(frames * window, FFT)) ** 2
    return np.log(power @ mel_filterbank() + 1e-6)


def tone(hertz: float = 1000.0, seconds: float = 0.5) -> np.ndarray:
    return 0.5 * np.sin(2 * np.pi * hertz * np.arange(round(seconds * RATE)) / RATE)


def test_log_mel_matches_numpy_on_a_1khz_tone_and_peaks_in_its_mel_bin():
    samples = tone()
    ours = log_mel(tf.constant(samples, tf.float32)).numpy()
    expected = numpy_log_mel(samples)
    assert ours.shape == expected.shape == (num_frames(len(samples)), NUM_BINS)
    np.testing.assert_allclose(ours, expected, rtol=1e-4, atol=2e-3)
    # the bin whose triangle weighs 1 kHz most: the mel bin holding the tone
    edges = np.linspace(hertz_to_mel(LOWER_HERTZ), hertz_to_mel(RATE / 2), NUM_BINS + 2)
    holding = int(np.argmin(np.abs(edges[1:-1] - hertz_to_mel(1000.0))))
    assert np.argmax(ours.mean(axis=0)) == holding
    assert np.all(np.argmax(ours, axis=1) == holding)


def test_frames_are_whole_windows_every_10_ms():
    for count in (400, 401, 559, 560, 16000):
        frames = log_mel(tf.zeros([count])).shape[0]
        assert frames == num_frames(count) == 1 + (count - 400) // 160
    assert num_frames(399) == 0
    assert list(num_frames(np.array([400, 560]))) == [1, 2]


def test_pcm_bytes_become_floats_in_minus_one_to_one():
    pcm = np.array([-32768, 0, 16384, 32767], "<i2").tobytes()
    np.testing.assert_allclose(
        pcm_to_float(tf.constant(pcm)).numpy(), [-1.0, 0.0, 0.5, 32767 / 32768]
    )


def test_each_bin_is_normalised_over_the_clip_and_silence_stays_finite():
    rng = np.random.default_rng(0)
    raw = rng.normal(3.0, 2.0, [50, NUM_BINS]).astype(np.float32)
    normal = normalise_utterance(tf.constant(raw)).numpy()
    np.testing.assert_allclose(normal.mean(axis=0), 0.0, atol=1e-5)
    np.testing.assert_allclose(normal.std(axis=0), 1.0, atol=1e-3)
    silence = features(tf.constant(np.zeros(4000, "<i2").tobytes())).numpy()
    assert silence.shape == (23, NUM_BINS) and np.all(np.abs(silence) < 1e-2)  # rounding
    pcm = (tone() * 32767).astype("<i2")
    expected = normalise_utterance(log_mel(tf.constant(pcm / 32768.0, tf.float32)))
    np.testing.assert_allclose(features(tf.constant(pcm.tobytes())), expected, atol=1e-5)


def test_spec_augment_zeroes_whole_bands_from_its_seed_and_nothing_when_off():
    ones = tf.ones([300, NUM_BINS])
    seed = tf.constant([3, 4], tf.int64)
    off = spec_augment(ones, seed, freq_masks=0, time_masks=0)
    assert np.array_equal(off.numpy(), ones.numpy())
    assert np.array_equal(spec_augment(ones, seed, freq_width=0, time_width=0), ones)
    masked_any = False
    for index in range(8):
        seed = tf.constant([index, 7], tf.int64)
        out = spec_augment(ones, seed).numpy()
        assert np.array_equal(out, spec_augment(ones, seed).numpy())  # stateless
        columns, rows = np.all(out == 0, axis=0), np.all(out == 0, axis=1)
        # every zero lies in a zeroed band of bins or of frames
        assert np.array_equal(out == 0, columns[None, :] | rows[:, None])
        assert columns.sum() <= 2 * 27 and rows.sum() <= 2 * 100
        masked_any |= columns.any() and rows.any()
    assert masked_any
    short = spec_augment(tf.ones([10, NUM_BINS]), seed, time_ratio=0.2).numpy()
    assert np.all(short == 0, axis=1).sum() <= 2 * 2  # p: a mask spans at most 20% of frames
