"""The speech front end, in the graph: 16 kHz PCM -> 80-bin log-mel filterbanks (25 ms Hann
windows every 10 ms, as the Cloud TPU ASR Transformer's and Lingvo's LibriSpeech recipes use)
normalised per utterance, and SpecAugment's masks for training (Park et al. 2019). The input
pipeline and the exported model compute `features` with the same ops.

Choices: the power spectrum |STFT|^2 of a 512-point FFT (periodic Hann window, no pre-emphasis,
no dither, frames only where a whole window fits), HTK mel filters from 20 Hz (Kaldi's and
torchaudio's default low edge; Lingvo used 125 Hz, which loses low voices' pitch) to the
Nyquist frequency 8 kHz, log(mel + 1e-6); then each bin's mean over the clip's frames
subtracted and its standard deviation divided out (a silent clip's bins: 0)."""

from __future__ import annotations

import gin
import numpy as np
import tensorflow as tf

from models.data.speech_schema import SAMPLE_RATE

NUM_BINS = 80
WINDOW_MS, HOP_MS = 25, 10
FRAME_LENGTH = SAMPLE_RATE * WINDOW_MS // 1000  # 400 samples
FRAME_STEP = SAMPLE_RATE * HOP_MS // 1000  # 160 samples
LOWER_HERTZ = 20.0
LOG_OFFSET = 1e-6  # log(mel + LOG_OFFSET): silence stays finite
NORM_EPSILON = 1e-6  # added to each bin's variance


def pcm_to_float(audio: tf.Tensor) -> tf.Tensor:
    """int16 little-endian PCM bytes (a scalar tf.string) -> float32 samples [n] in [-1, 1)."""
    samples = tf.io.decode_raw(audio, tf.int16, little_endian=True)
    return tf.cast(samples, tf.float32) / 32768.0


def fft_length(frame_length: int) -> int:
    """The FFT size of a window: the power of two that holds it (400 samples: 512)."""
    return 1 << (frame_length - 1).bit_length()


def log_mel(
    samples: tf.Tensor,
    sample_rate: int = SAMPLE_RATE,
    num_bins: int = NUM_BINS,
    window_ms: int = WINDOW_MS,
    hop_ms: int = HOP_MS,
) -> tf.Tensor:
    """float32 samples [n] -> log-mel filterbank energies [frames, num_bins]."""
    frame, step = sample_rate * window_ms // 1000, sample_rate * hop_ms // 1000
    fft = fft_length(frame)
    spectrum = tf.signal.stft(samples, frame, step, fft, window_fn=tf.signal.hann_window)
    power = tf.math.square(tf.math.abs(spectrum))
    weights = tf.signal.linear_to_mel_weight_matrix(
        num_bins, fft // 2 + 1, sample_rate, LOWER_HERTZ, sample_rate / 2
    )
    return tf.math.log(tf.linalg.matmul(power, weights) + LOG_OFFSET)


def num_frames(num_samples: int | np.ndarray) -> int | np.ndarray:
    """Frames `log_mel` gives for clips of num_samples (whole windows only; 0 below one)."""
    frames = np.maximum(0, 1 + (np.asarray(num_samples, np.int64) - FRAME_LENGTH) // FRAME_STEP)
    return int(frames) if frames.ndim == 0 else frames


def normalise_utterance(features: tf.Tensor) -> tf.Tensor:
    """Each bin of [frames, bins] at mean 0 and variance 1 over the clip's frames."""
    mean, variance = tf.nn.moments(features, axes=[0], keepdims=True)
    return (features - mean) * tf.math.rsqrt(variance + NORM_EPSILON)


def from_samples(samples: tf.Tensor) -> tf.Tensor:
    """float32 samples [n] in [-1, 1) (tf.audio.decode_wav's) -> normalised log-mel features
    [frames, NUM_BINS]."""
    return normalise_utterance(log_mel(samples))


def features(audio: tf.Tensor) -> tf.Tensor:
    """PCM bytes -> normalised log-mel features [frames, NUM_BINS]: what both the input
    pipeline and the exported model (from_samples of its decoded WAV) compute."""
    return from_samples(pcm_to_float(audio))


def _band_mask(
    seed: tf.Tensor, size: tf.Tensor, count: int, max_width: int, max_ratio: float
) -> tf.Tensor:
    """bool [size]: `count` bands, each of a width uniform in [0, max_width] (at most
    max_ratio x size) starting uniformly where it fits."""
    width_seed, start_seed = tf.unstack(tf.random.experimental.stateless_split(seed, 2))
    limit = tf.minimum(max_width, tf.cast(max_ratio * tf.cast(size, tf.float32), tf.int32))
    widths = tf.random.stateless_uniform([count], width_seed, 0, max_width + 1, tf.int32)
    widths = tf.minimum(widths, limit)
    room = tf.cast(size - widths + 1, tf.float32)
    starts = tf.cast(tf.random.stateless_uniform([count], start_seed) * room, tf.int32)
    positions = tf.range(size)[:, None]
    inside = (positions >= starts[None, :]) & (positions < (starts + widths)[None, :])
    return tf.reduce_any(inside, axis=1)


@gin.configurable("spec_augment")
def spec_augment(
    features: tf.Tensor,
    seed: tf.Tensor,
    freq_masks: int = 2,
    freq_width: int = 27,
    time_masks: int = 2,
    time_width: int = 100,
    time_ratio: float = 1.0,
) -> tf.Tensor:
    """SpecAugment's frequency and time masks on normalised features [frames, bins], set to 0
    (the mean), from a stateless seed [2]; defaults: Park et al. 2019's LibriSpeech double
    policy LD without time warping (F=27, mF=2, T=100, mT=2, p=1.0). Zero masks or widths
    change nothing."""
    freq_seed, time_seed = tf.unstack(tf.random.experimental.stateless_split(seed, 2))
    shape = tf.shape(features)
    bins = _band_mask(freq_seed, shape[1], freq_masks, freq_width, 1.0)
    frames = _band_mask(time_seed, shape[0], time_masks, time_width, time_ratio)
    masked = frames[:, None] | bins[None, :]
    return tf.where(masked, tf.zeros_like(features), features)
