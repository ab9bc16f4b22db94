"""A built-in test set of real recorded speech: the 12 transcribed 16 kHz utterances of CMU
Sphinx's test data (Debian's pocketsphinx-testdata, BSD-2-clause, Carnegie Mellon University),
about 45 s in all: five LibriVox sentences of Sense and Sensibility (read speech, as in
LibriSpeech), five card names from a small grammar's test, "go forward ten meters" and the
digits "two nine three four zero". Too small to train on: it measures how a model trained on
synthetic speech (spoken_wordnet) hears human voices, and smoke-tests the real-audio path.

Transcripts: librivox/transcription and cards/cards.transcription (Sphinx's `<s> words </s>
(uttid)` lines); goforward.raw says the sentence of goforward.gram's first rule and
tidigits/dhd.2934z.raw the digits of its name (headerless s16le 16 kHz, both). Written as a
LibriSpeech-layout folder (speaker = source: librivox, cards, goforward, tidigits; the
converter takes any folder names, as spoken_wordnet's voice names show; FLAC and upper-case
.trans.txt) and converted by the LibriSpeech converter as split `test` only; the FLAC folder is
then deleted. dataset_info.json adds the package and version, the licence, each utterance's
source file and the word error rate of the best constant transcript (spoken_wordnet's
constant_baseline, its candidates drawn from these transcripts themselves: there is no train
split, so it is an oracle's constant, a floor that a model must beat)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from models.core.errors import UsageError
from models.data.builtin.cache import build_once
from models.data.builtin.spoken_wordnet import constant_baseline

NAME = "cmu-recordings-v1"
PACKAGE = "pocketsphinx-testdata"
INSTALL = f"apt-get install {PACKAGE}"
DATA = Path("/usr/share/pocketsphinx/test/data")
SPLIT = "test"
SAMPLE_RATE = 16000
LICENCE = (
    "BSD-2-clause, Copyright 1995-2014 Carnegie Mellon University "
    f"(/usr/share/doc/{PACKAGE}/copyright)"
)
# Sphinx transcription lines: "<s> words </s> (uttid)" or "words (uttid)".
SPHINX_LINE = re.compile(r"(?:<s>)?\s*(?P<words>.*?)\s*(?:</s>)?\s*\((?P<id>[^()\s]+)\)")
TRANSCRIBED = {  # source: its transcription file, beside its .wav files
    "librivox": "librivox/transcription",
    "cards": "cards/cards.transcription",
}
RAW = (  # source, chapter, utterance, file, transcript (with where it is written)
    ("goforward", "goforward", "001", "goforward.raw", "go forward ten meters"),  # .gram's <move>
    ("tidigits", "dhd", "2934z", "tidigits/dhd.2934z.raw", "two nine three four zero"),  # name
)


@dataclass(frozen=True)
class Clip:
    """One utterance: its LibriSpeech id parts, source file (relative to DATA) and words."""

    speaker: str  # the source
    chapter: str
    utterance: str
    origin: str
    text: str  # lower case, as the source writes it

    @property
    def utterance_id(self) -> str:
        return f"{self.speaker}-{self.chapter}-{self.utterance}"


def _required(path: Path) -> Path:
    """path, or one UsageError line naming the package to install."""
    if not path.is_file():
        raise UsageError(
            f"the built-in cmu_recordings reads Debian's {PACKAGE} at {path}, which is "
            f"missing: install it with `{INSTALL}` (`make` does, as root)"
        )
    return path


def read_transcription(path: Path) -> list[tuple[str, str]]:
    """(utterance id, lower-case words) of each line of a Sphinx transcription file."""
    pairs = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        match = SPHINX_LINE.fullmatch(line.strip())
        if not match or not match["words"]:
            raise UsageError(f"{path}:{number} is not a Sphinx transcription line: {line!r}")
        pairs.append((match["id"], " ".join(match["words"].lower().split())))
    return pairs


def _transcribed(speaker: str, transcription: str, data: Path) -> list[Clip]:
    """The clips of a transcription file: uttid = a .wav beside it; LibriVox's ids are
    <chapter>-<number>, the cards' a number (chapter: the source)."""
    path = _required(data / transcription)
    clips = []
    for uttid, text in read_transcription(path):
        chapter, _, utterance = uttid.rpartition("-")
        origin = str(path.parent.relative_to(data) / f"{uttid}.wav")
        _required(data / origin)
        clips.append(Clip(speaker, chapter or speaker, utterance, origin, text))
    return clips


def clips(data: Path | None = None) -> list[Clip]:
    """The 12 utterances, LibriVox, cards, goforward, tidigits; UsageError when a file is
    missing (the package is not installed)."""
    data = DATA if data is None else data
    found = [c for speaker, path in TRANSCRIBED.items() for c in _transcribed(speaker, path, data)]
    for speaker, chapter, utterance, origin, text in RAW:
        _required(data / origin)
        found.append(Clip(speaker, chapter, utterance, origin, text))
    return found


def samples_of(clip: Clip, data: Path) -> np.ndarray:
    """The clip's int16 samples: a WAV file, or headerless little-endian 16-bit PCM."""
    path = data / clip.origin
    if path.suffix == ".raw":
        return np.frombuffer(path.read_bytes(), dtype="<i2").astype(np.int16)
    from models.data.audio_files import read_audio

    return read_audio(str(path))


def write_librispeech(found: list[Clip], data: Path, folder: Path) -> None:
    """folder/<speaker>/<chapter>/<id>.flac and <speaker>-<chapter>.trans.txt (upper case)."""
    import soundfile

    chapters: dict[tuple[str, str], list[Clip]] = {}
    for clip in found:
        chapters.setdefault((clip.speaker, clip.chapter), []).append(clip)
    for (speaker, chapter), members in chapters.items():
        where = folder / speaker / chapter
        where.mkdir(parents=True)
        lines = sorted(f"{c.utterance_id} {c.text.upper()}\n" for c in members)
        (where / f"{speaker}-{chapter}.trans.txt").write_text("".join(lines))
        for clip in members:
            path = where / f"{clip.utterance_id}.flac"
            samples = samples_of(clip, data)
            soundfile.write(path, samples, SAMPLE_RATE, format="FLAC", subtype="PCM_16")


def package_version() -> str | None:
    """The installed package's Debian version (dpkg-query), None without dpkg."""
    try:
        result = subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}", PACKAGE],
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        return None
    return result.stdout.strip() or None


def _description(found: list[Clip], data: Path) -> dict:
    """What dataset_info.json adds to the converter's counts."""
    texts = [clip.text for clip in found]
    return {
        "source": {
            "debian_package": PACKAGE,
            "version": package_version(),
            "folder": str(data),
            "speakers": sorted({clip.speaker for clip in found}),
        },
        "licence": LICENCE,
        "utterances": {
            clip.utterance_id: {"source": clip.speaker, "file": clip.origin, "text": clip.text}
            for clip in found
        },
        "constant_transcript_wer": {
            SPLIT: {
                **constant_baseline(texts, texts),
                "chosen_on": "the test transcripts themselves (no train split)",
            }
        },
    }


def _write(out: Path, data: Path | None = None) -> None:
    """The test split's records and dataset_info.json in out, through a LibriSpeech folder."""
    from models.data.convert import librispeech

    data = DATA if data is None else data
    found = clips(data)  # before anything is written: one line if the package is missing
    folder = out / "librispeech" / SPLIT
    write_librispeech(found, data, folder)
    librispeech.convert([str(folder)], str(out), SPLIT)
    shutil.rmtree(out / "librispeech")
    info = json.loads((out / "dataset_info.json").read_text())
    info[f"{SPLIT}_statistics"]["inputs"] = [f"librispeech/{SPLIT} (deleted)"]
    info.update(_description(found, data))
    (out / "dataset_info.json").write_text(json.dumps(info, indent=1) + "\n")


def prepare() -> str:
    """Directory of the speech records and dataset_info.json, built once into the cache."""
    return build_once(NAME, _write)
