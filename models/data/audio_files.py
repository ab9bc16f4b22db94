"""Audio files as the speech data reads them: 16 kHz mono clips of at least one 25 ms window,
checked in one place for the LibriSpeech converter (FLAC or WAV files) and for the WAV bytes a
user hands to `--mode=predict --audio` (the exported model decodes 16-bit PCM WAV in the
graph). Bad audio is one UsageError line naming the file and what to do."""

from __future__ import annotations

import io

import numpy as np

from models.core.errors import UsageError
from models.data.audio_features import FRAME_LENGTH
from models.data.speech_schema import SAMPLE_RATE


def _check_format(path: str, rate: int, channels: int, samples: int) -> None:
    """UsageError unless the audio is 16 kHz mono with at least one 25 ms window."""
    if rate != SAMPLE_RATE:
        raise UsageError(
            f"{path} is sampled at {rate} Hz, not {SAMPLE_RATE}: resample it "
            f"(sox IN OUT rate {SAMPLE_RATE})"
        )
    if channels != 1:
        raise UsageError(
            f"{path} has {channels} channels, not one: mix it down (sox IN OUT remix -)"
        )
    if samples < FRAME_LENGTH:
        raise UsageError(
            f"{path} is empty: {samples} samples, under one 25 ms window ({FRAME_LENGTH})"
        )


def _unreadable(path: str, error: Exception) -> UsageError:
    reason = getattr(error, "error_string", None) or str(error)
    return UsageError(f"{path} is not readable audio: {reason}")


def audio_samples(path: str) -> int:
    """The clip's sample count from its header; UsageError when the file is empty,
    unreadable, not 16 kHz or not mono."""
    import soundfile
    import tensorflow as tf

    if tf.io.gfile.stat(path).length == 0:
        raise UsageError(f"{path} is empty (0 bytes)")
    try:
        with tf.io.gfile.GFile(path, "rb") as file:
            info = soundfile.info(file)
    except (soundfile.SoundFileError, RuntimeError) as error:
        raise _unreadable(path, error) from None
    _check_format(path, info.samplerate, info.channels, info.frames)
    return int(info.frames)


def read_audio(path: str) -> np.ndarray:
    """int16 samples of a 16 kHz mono FLAC or WAV file; UsageError when it is empty,
    unreadable, not 16 kHz or not mono."""
    import soundfile
    import tensorflow as tf

    if tf.io.gfile.stat(path).length == 0:
        raise UsageError(f"{path} is empty (0 bytes)")
    try:
        with tf.io.gfile.GFile(path, "rb") as file:
            samples, rate = soundfile.read(file, dtype="int16", always_2d=True)
    except (soundfile.SoundFileError, RuntimeError) as error:
        raise _unreadable(path, error) from None
    _check_format(path, rate, samples.shape[1], samples.shape[0])
    return samples[:, 0]


def wav_bytes(samples: np.ndarray) -> bytes:
    """A 16-bit PCM WAV file of int16 mono samples at 16 kHz (what serving and --audio read)."""
    import soundfile

    buffer = io.BytesIO()
    soundfile.write(buffer, np.asarray(samples, np.int16), SAMPLE_RATE, "PCM_16", format="WAV")
    return buffer.getvalue()


def check_wav(data: bytes, name: str, max_seconds: float) -> None:
    """UsageError unless `data` is a 16-bit PCM WAV file (what tf.audio.decode_wav reads) of
    16 kHz mono audio, at least one 25 ms window and at most `max_seconds` long."""
    import soundfile

    if not data:
        raise UsageError(f"{name} is empty (0 bytes)")
    try:
        info = soundfile.info(io.BytesIO(data))
    except (soundfile.SoundFileError, RuntimeError) as error:
        raise _unreadable(name, error) from None
    if (info.format, info.subtype) != ("WAV", "PCM_16"):
        raise UsageError(
            f"{name} is {info.format} {info.subtype}, not 16-bit PCM WAV: convert it "
            f"(sox IN -b 16 -e signed-integer OUT.wav)"
        )
    _check_format(name, info.samplerate, info.channels, info.frames)
    if info.frames > max_seconds * SAMPLE_RATE:
        raise UsageError(
            f"{name} is {info.frames / SAMPLE_RATE:.2f} s long, over the recipe's longest clip "
            f"of {max_seconds:g} s (speech_input.max_seconds)"
        )
