"""Offline speech synthesis for the built-in speech data: espeak-ng (Debian's espeak-ng, GPL-3;
its output is data, not a derived program) speaks sentences in one of its English accents and
voice variants at a speed and pitch. Each clip is then trimmed of its silences, padded with a
little silence, resampled from espeak-ng's 22,050 Hz to 16 kHz, mixed with white or pink noise
at a chosen SNR and scaled to a chosen peak level, as int16. Everything random comes from the
caller's seeds, so the same session gives the same samples.

A session's sentences are spoken by one espeak-ng run, with long pauses between them, and cut
at those pauses: starting espeak-ng (its libraries, voice list and phoneme data) costs about
three times what speaking a short sentence does. Cut apart, a sentence is what espeak-ng says
alone up to a few samples of its voice's state (echo, flutter) carried over the pause. When the
cuts do not give one clip a sentence (not seen on the built-in's 1,300 sessions), each sentence
is spoken alone."""

from __future__ import annotations

import functools
import shutil
import struct
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from models.core.errors import UsageError

PROGRAM = "espeak-ng"
INSTALL = "apt-get install espeak-ng"
ESPEAK_RATE = 22050  # espeak-ng's output sample rate (its --stdout WAV)
SAMPLE_RATE = 16000
UP, DOWN = 320, 441  # 22,050 Hz x 320 / 441 = 16,000 Hz
SILENCE = 0.01  # of full scale: below it a sample is silence (echoes decay below it)
# Between a session's sentences: a full stop (each ends as it does alone) and 30 of espeak-ng's
# long pauses (phoneme input), 1.2 s at 200 words a minute, against at most 0.25 s of silence
# inside a sentence (3-8 words, no commas).
PAUSE = ". [[" + "_:" * 30 + "]] "
CUT = 0.6  # seconds of silence that separate two sentences
NOISES = ("white", "pink")


@dataclass(frozen=True)
class Voice:
    """An espeak-ng voice and its settings for a session."""

    language: str  # espeak-ng's English language, e.g. "en-us", "en-gb-scotland"
    variant: str  # a voice variant file, e.g. "m3", "f2", "klatt4", "Alex" ("": the language's)
    speed: int  # words a minute (espeak-ng -s)
    pitch: int  # 0-99 (espeak-ng -p), relative to the variant's own range


@dataclass(frozen=True)
class Effects:
    """What is done to one spoken sentence to make its clip."""

    lead: float  # seconds of silence before the speech
    tail: float  # ...and after it
    noise: str  # "white" or "pink"
    snr_db: float  # speech power over noise power
    peak: float  # the clip's largest magnitude, a fraction of full scale
    seed: int  # of the noise


def executable() -> str:
    """espeak-ng's path; UsageError naming the install command when it is missing."""
    path = shutil.which(PROGRAM)
    if path is None:
        raise UsageError(
            f"the built-in speech data is spoken by {PROGRAM}, which is missing: install it "
            f"with `{INSTALL}` (`make` does, as root)"
        )
    return path


def version() -> str:
    """espeak-ng's version line, e.g. "eSpeak NG text-to-speech: 1.51"."""
    output = subprocess.run(
        [executable(), "--version"], capture_output=True, text=True, check=True
    ).stdout
    return output.split("  Data at:")[0].strip()


def run(text: str, voice: Voice) -> np.ndarray:
    """espeak-ng's int16 samples at ESPEAK_RATE for `text`."""
    name = f"{voice.language}+{voice.variant}" if voice.variant else voice.language
    command = [
        executable(),
        "-v",
        name,
        "-s",
        str(voice.speed),
        "-p",
        str(voice.pitch),
        "--stdout",
        text,
    ]
    result = subprocess.run(command, capture_output=True, check=False)
    if result.returncode != 0 or not result.stdout.startswith(b"RIFF"):
        message = result.stderr.decode(errors="replace").strip() or "no WAV output"
        raise UsageError(f"{PROGRAM} {' '.join(command[1:-1])} failed on {text!r}: {message}")
    return wav_samples(result.stdout)


def wav_samples(wav: bytes) -> np.ndarray:
    """The int16 samples of a streamed WAV: espeak-ng's --stdout leaves the sizes unset, so
    the data chunk runs to the end."""
    offset = 12  # "RIFF", size, "WAVE"
    while offset + 8 <= len(wav):
        chunk, size = wav[offset : offset + 4], struct.unpack("<I", wav[offset + 4 : offset + 8])[0]
        if chunk == b"data":
            data = wav[offset + 8 :]
            return np.frombuffer(data[: len(data) // 2 * 2], "<i2").astype(np.int16)
        offset += 8 + size
    raise UsageError(f"{PROGRAM} wrote a WAV without a data chunk")


def speak(texts: Sequence[str], voice: Voice) -> list[np.ndarray]:
    """Each text's int16 samples at ESPEAK_RATE, without leading and trailing silence: one
    espeak-ng run cut at its pauses (each text alone if the cuts miscount)."""
    clips = [trim(clip) for clip in cut(run(PAUSE.join(texts) + ".", voice))]
    if len(clips) != len(texts):
        clips = [trim(run(f"{text}.", voice)) for text in texts]
    return clips


def _quiet(samples: np.ndarray) -> np.ndarray:
    return np.abs(samples.astype(np.int32)) <= SILENCE * 32768


def cut(samples: np.ndarray) -> list[np.ndarray]:
    """The sounds of samples between runs of at least CUT seconds of silence."""
    edges = np.diff(np.concatenate([[0], _quiet(samples).astype(np.int8), [0]]))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)  # of silences
    long = ends - starts >= CUT * ESPEAK_RATE
    bounds = [0, *np.column_stack([starts[long], ends[long]]).ravel().tolist(), samples.size]
    pieces = [samples[start:end] for start, end in zip(bounds[::2], bounds[1::2], strict=True)]
    return [piece for piece in pieces if not _quiet(piece).all()]


def trim(samples: np.ndarray) -> np.ndarray:
    """samples without their leading and trailing silence (all of them if all are silent)."""
    loud = np.flatnonzero(~_quiet(samples))
    return samples[loud[0] : loud[-1] + 1] if loud.size else samples


@functools.cache
def _lowpass() -> np.ndarray:
    """resample_poly's default anti-aliasing filter for UP/DOWN (a Kaiser-windowed sinc of
    20 x max(UP, DOWN) + 1 taps), designed once: designing it took a third of the work."""
    from scipy.signal import firwin

    half = 10 * max(UP, DOWN)
    return firwin(2 * half + 1, 1.0 / max(UP, DOWN), window=("kaiser", 5.0))


def resample(samples: np.ndarray) -> np.ndarray:
    """float64 samples at 16 kHz in [-1, 1) from int16 ones at espeak-ng's 22,050 Hz."""
    from scipy.signal import resample_poly

    return resample_poly(samples.astype(np.float64) / 32768, UP, DOWN, window=_lowpass())


def noise(kind: str, size: int, rng: np.random.Generator) -> np.ndarray:
    """Unit-power white noise, or pink noise (power falling as 1/f: white noise's spectrum
    scaled by 1/sqrt(f), the lowest bin as the next; shaped at a length the FFT is fast for,
    then cut to size)."""
    if kind == "white" or size < 2:
        return rng.standard_normal(size)
    from scipy.fft import irfft, next_fast_len, rfft

    length = next_fast_len(size, real=True)
    spectrum = rfft(rng.standard_normal(length))
    frequency = np.arange(spectrum.size, dtype=np.float64)
    frequency[0] = 1.0
    pink = irfft(spectrum / np.sqrt(frequency), n=length)[:size]
    return pink / np.sqrt(np.mean(pink**2))


def finish(speech: np.ndarray, effects: Effects) -> np.ndarray:
    """A clip's int16 samples at 16 kHz from espeak-ng's trimmed speech: padded, resampled,
    noised and scaled to the effects' peak."""
    speech = resample(speech)
    lead, tail = round(effects.lead * SAMPLE_RATE), round(effects.tail * SAMPLE_RATE)
    clip = np.concatenate([np.zeros(lead), speech, np.zeros(tail)])
    power = np.mean(speech**2) if speech.size else 0.0
    rng = np.random.default_rng(effects.seed)
    clip = clip + noise(effects.noise, clip.size, rng) * np.sqrt(
        power / 10 ** (effects.snr_db / 10)
    )
    largest = np.max(np.abs(clip)) if clip.size else 0.0
    if largest > 0:
        clip = clip * (effects.peak / largest)
    return np.clip(np.round(clip * 32768), -32768, 32767).astype(np.int16)


def render(texts: Sequence[str], voice: Voice, effects: Sequence[Effects]) -> list[np.ndarray]:
    """The clips (int16, 16 kHz) of a session: texts spoken in one voice, each finished with
    its effects."""
    return [finish(speech, e) for speech, e in zip(speak(texts, voice), effects, strict=True)]
