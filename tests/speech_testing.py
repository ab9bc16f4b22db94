"""A tiny folder in LibriSpeech's layout, written by the tests: FLAC clips (tones and noise of
0.5 to 3 s, deterministic) and upper-case `.trans.txt` transcripts, two speakers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import soundfile

RATE = 16000
# (speaker, chapter, utterance, seconds, transcript)
CLIPS = [
    ("19", "198", 0, 0.5, "NORTHANGER ABBEY"),
    ("19", "198", 1, 1.25, "CHAPTER ONE"),
    ("19", "198", 2, 3.0, "NO ONE WHO HAD EVER SEEN CATHERINE MORLAND IN HER INFANCY"),
    ("26", "495", 0, 0.75, "THE HOUSE WAS QUIET"),
    ("26", "495", 1, 2.5, "SHE DIDN'T KNOW WHAT TO SAY TO HIM"),
    ("26", "495", 2, 1.75, "AND THEN IT RAINED"),
]


def clip(speaker: str, chapter: str, utterance: int, seconds: float) -> np.ndarray:
    """int16 samples of one clip: a tone of a pitch its ids choose, with a little noise."""
    seed = int(speaker) + int(chapter) + utterance
    rng = np.random.default_rng(seed)
    time = np.arange(round(seconds * RATE)) / RATE
    pitch = 150 + 50 * (seed % 40)
    wave = 0.3 * np.sin(2 * np.pi * pitch * time) + 0.02 * rng.standard_normal(time.size)
    return (wave * 32767).astype(np.int16)


def utterance_id(speaker: str, chapter: str, utterance: int) -> str:
    return f"{speaker}-{chapter}-{utterance:04d}"


def write_librispeech(root: Path, clips=CLIPS) -> dict[str, tuple[str, np.ndarray]]:
    """Writes the clips under root; returns {utterance id: (transcript, samples)}."""
    written, lines = {}, {}
    for speaker, chapter, utterance, seconds, text in clips:
        folder = root / speaker / chapter
        folder.mkdir(parents=True, exist_ok=True)
        name = utterance_id(speaker, chapter, utterance)
        samples = clip(speaker, chapter, utterance, seconds)
        soundfile.write(folder / f"{name}.flac", samples, RATE, subtype="PCM_16")
        lines.setdefault(folder / f"{speaker}-{chapter}.trans.txt", []).append(f"{name} {text}")
        written[name] = (text, samples)
    for path, text in lines.items():
        path.write_text("\n".join(text) + "\n")
    return written
