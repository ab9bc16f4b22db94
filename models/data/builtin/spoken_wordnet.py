"""The built-in speech task: WordNet 3.0's example sentences (Princeton's WordNet licence,
Debian's wordnet-base) spoken offline by espeak-ng (builtin/espeak.py) in its English accents
and voice variants, at random speeds and pitches, with white or pink noise, as 16 kHz speech
records with LibriSpeech's transcripts.

Text: the quoted examples of WordNet's glosses ("the news was very bad") that are plain
sentences of MIN_WORDS to MAX_WORDS words (letters, an apostrophe inside a word, commas and a
final . ! or ?; no digits, hyphens, acronyms or single letters but "a" and "I"), lower-cased and
stripped of punctuation as normalise_text would; of these, those whose words are all among the
VOCABULARY most frequent words of the candidates, so that a small model on a CPU can learn them
in minutes. HELD_OUT_SENTENCES per mille of the sentences (by a hash) are never spoken in train,
validation or test: the extra split test_new_sentences speaks them.

Voices: every one of LANGUAGES (espeak-ng's English accents) with every voice variant; the
variants are split (VARIANTS), so validation and test voices are unseen in training, in timbre
as well as in combination (every split hears every accent). Validation and test speak the train
sentences: the requirement is unseen voices, and a model that learns ~700 sentences' words in
minutes is the task's scale; test_new_sentences (test voices, unseen sentences) measures the
harder case. A voice speaks in sessions of up to SESSION sentences (one espeak-ng run, see
espeak.py) at a speed (words a minute) and pitch drawn for the session; each clip draws its
leading and trailing silence, noise colour, SNR and peak level. All draws come from generators
seeded by the split, so builds are identical to the byte (~60-70 s on 2 cores, ~290 MB).

Written as a LibriSpeech-layout folder (speaker = voice, e.g. en_us_m3; chapter = speed and
pitch, e.g. 16542 for 165 words a minute at pitch 42; FLAC and upper-case .trans.txt) and
converted by the LibriSpeech converter, the code that reads real LibriSpeech; the FLAC folder
is then deleted. dataset_info.json adds the sources, licences, voices per split, the text
filter's counts and the word error rate of the best constant transcript on each held-out split
(chosen among the empty string, the most frequent train words and the most frequent train
sentence)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from models.core.errors import UsageError
from models.data.builtin import espeak
from models.data.builtin.cache import build_once, build_progress
from models.data.builtin.wordnet_glosses import INSTALL as WORDNET_INSTALL

NAME = "spoken-wordnet-v1"
WORDNET = Path("/usr/share/wordnet")
PARTS_OF_SPEECH = ("noun", "verb", "adj", "adv")
MIN_WORDS, MAX_WORDS = 3, 8
VOCABULARY = 500  # most frequent words of the candidate sentences
HELD_OUT_SENTENCES = 100  # per mille, by a hash of the sentence: test_new_sentences only
LANGUAGES = (
    "en-gb", "en-us", "en-gb-scotland", "en-gb-x-rp", "en-gb-x-gbclan", "en-gb-x-gbcwmd",
    "en-029", "en-us-nyc",
)  # fmt: skip
# espeak-ng's voice variants (--voices=variant) but the unintelligible or gimmicky: whisper,
# whisperf and caleb (no voicing), Demonic, announcer, kaukovalta, fast (a test), Mr serious
# (john's twin), klatt6 (klatt's twin in espeak-ng 1.51) and those with long echoes (robosoft*,
# RicishayMax*, UniRobot, anikaRobot).
VARIANTS = {
    "train": (
        "m1", "m2", "m5", "m8", "f1", "f2", "f4", "klatt", "klatt2", "klatt4",
        "adam", "Andy", "AnxiousAndy", "antonio", "benjamin", "boris", "croak", "david", "Denis",
        "Diogo", "ed", "edward", "edward2", "Gene", "Gene2", "grandpa", "gustave", "Henrique",
        "Hugo", "iven", "iven2", "iven3", "iven4", "Jacky", "john", "Lee", "marcelo", "Marco",
        "Mario", "max", "michel", "miguel", "Nguyen", "norbert", "pablo", "paul", "pedro",
        "quincy", "rob", "robert", "sandro", "Storm", "travis", "Tweaky", "victor", "Alicia",
        "Andrea", "anika", "aunty", "belinda", "grandma", "shelby", "steph2", "steph3", "zac",
    ),
    "validation": ("m3", "m6", "f3", "klatt3", "Michael", "Alex", "Annie"),
    "test": ("m4", "m7", "f5", "klatt5", "Mike", "linda", "steph"),
}  # fmt: skip
UTTERANCES = {"train": 5000, "validation": 400, "test": 400, "test_new_sentences": 200}
SHARDS = {"train": 4}  # the others: one
WORDPIECES = 256  # WordPiece tokens learned from train (speech_input.targets = "wordpieces")
SPEEDS = (130, 200)  # words a minute, inclusive
PITCHES = (30, 70)  # espeak-ng's 0-99, inclusive
SILENCES = (0.05, 0.3)  # seconds before and after the speech
SNRS_DB = (15.0, 30.0)
PEAKS_DB = (-20.0, -1.0)  # the clip's peak, dB of full scale
SESSION = 5  # utterances a voice speaks at one speed and pitch, in one espeak-ng run
SEED = 37
WORD = r"[A-Za-z][a-z]*(?:'[a-z]+)?"
SENTENCE = re.compile(rf"{WORD}(?:,? {WORD})*[.!?]?")
QUOTE = re.compile(r'"([^"]+)"')
BASELINE_WORDS = 50  # the most frequent train words tried as constant transcripts


@dataclass(frozen=True)
class Utterance:
    """One planned clip: its LibriSpeech id, what is said and what is done to it."""

    utterance_id: str  # <speaker>-<chapter>-<number>
    text: str  # normalised: lower case, words separated by single spaces
    effects: espeak.Effects


@dataclass(frozen=True)
class Session:
    """Utterances one voice speaks at one speed and pitch: one espeak-ng run."""

    speaker: str
    chapter: str  # speed and pitch: 16542 is 165 words a minute at pitch 42
    voice: espeak.Voice
    utterances: tuple[Utterance, ...]


# ---------------------------------------------------------------- text


def read_examples(folder: Path = WORDNET) -> list[str]:
    """The quoted example sentences of every synset's gloss, in file order."""
    examples = []
    for part in PARTS_OF_SPEECH:
        path = folder / f"data.{part}"
        if not path.is_file():
            raise UsageError(
                f"the built-in spoken WordNet reads Debian's WordNet at {path}, which is "
                f"missing: install it with `{WORDNET_INSTALL}` (`make` does, as root)"
            )
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.startswith("  ") and "|" in line:  # not the licence header
                examples.extend(QUOTE.findall(line.split("|", 1)[1]))
    return examples


def candidate(example: str) -> str | None:
    """The example lower-cased without punctuation if it is a plain sentence of MIN_WORDS to
    MAX_WORDS words, else None."""
    example = " ".join(example.split())
    if not SENTENCE.fullmatch(example):
        return None
    words = example.rstrip(".!?").replace(",", "").lower().split()
    if not MIN_WORDS <= len(words) <= MAX_WORDS:
        return None
    if any(len(word) == 1 and word not in ("a", "i") for word in words):
        return None
    return " ".join(words)


def select_sentences(examples: Iterable[str], vocabulary: int = VOCABULARY) -> dict:
    """The distinct candidate sentences whose words are all among the `vocabulary` most
    frequent words of the candidates (ties: alphabetical), in the order of their hashes, with
    the counts of the filter's steps."""
    candidates = sorted({c for c in map(candidate, examples) if c is not None})
    counts = Counter(word for sentence in candidates for word in sentence.split())
    frequent = set(sorted(counts, key=lambda word: (-counts[word], word))[:vocabulary])
    kept = [s for s in candidates if all(word in frequent for word in s.split())]
    kept.sort(key=digest)
    return {
        "candidates": len(candidates),
        "sentences": kept,
        "vocabulary": sorted({word for sentence in kept for word in sentence.split()}),
    }


def digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


def held_out(sentence: str) -> bool:
    """Whether the sentence is spoken only in test_new_sentences."""
    return int.from_bytes(digest(sentence)[:4], "big") % 1000 < HELD_OUT_SENTENCES


# ---------------------------------------------------------------- voices and plan


def speaker_name(language: str, variant: str) -> str:
    """A filesystem- and LibriSpeech-id-safe voice name: en-gb-x-rp + Alex -> en_gb_x_rp_alex."""
    return f"{language}_{variant}".lower().replace("-", "_")


def voices(split: str) -> list[tuple[str, str]]:
    """(language, variant) of the split's voices: test_new_sentences speaks with test's."""
    variants = VARIANTS["test" if split == "test_new_sentences" else split]
    return [(language, variant) for variant in variants for language in LANGUAGES]


def _cycled(items: Sequence, count: int, rng: np.random.Generator) -> list:
    """count items: the items in a fresh random order, again and again."""
    out: list = []
    while len(out) < count:
        out.extend(items[i] for i in rng.permutation(len(items)))
    return out[:count]


def _effects(rng: np.random.Generator) -> espeak.Effects:
    return espeak.Effects(
        lead=round(float(rng.uniform(*SILENCES)), 3),
        tail=round(float(rng.uniform(*SILENCES)), 3),
        noise=espeak.NOISES[int(rng.integers(len(espeak.NOISES)))],
        snr_db=round(float(rng.uniform(*SNRS_DB)), 2),
        peak=round(10 ** (float(rng.uniform(*PEAKS_DB)) / 20), 4),
        seed=int(rng.integers(2**32)),
    )


def plan(
    split: str,
    sentences: Sequence[str],
    voices_: Sequence[tuple[str, str]],
    count: int,
    seed: int = SEED,
) -> list[Session]:
    """count utterances of the split, every sentence and every voice in turn (in random
    orders), in sessions of up to SESSION utterances of a voice at a random speed and pitch;
    each utterance with its own random effects (all seeded by the split's name and `seed`)."""
    rng = np.random.default_rng([seed, *digest(split)[:4]])
    said: dict[tuple[str, str], list[str]] = {}
    texts, speakers = _cycled(sentences, count, rng), _cycled(voices_, count, rng)
    for text, voice in zip(texts, speakers, strict=True):
        said.setdefault(voice, []).append(text)
    numbers: Counter = Counter()
    sessions = []
    for (language, variant), texts in said.items():
        speaker = speaker_name(language, variant)
        for start in range(0, len(texts), SESSION):
            speed = int(rng.integers(SPEEDS[0], SPEEDS[1] + 1))
            pitch = int(rng.integers(PITCHES[0], PITCHES[1] + 1))
            chapter = f"{speed}{pitch:02d}"
            utterances = []
            for text in texts[start : start + SESSION]:
                numbers[speaker, chapter] += 1
                utterance_id = f"{speaker}-{chapter}-{numbers[speaker, chapter]:04d}"
                utterances.append(Utterance(utterance_id, text, _effects(rng)))
            voice = espeak.Voice(language, variant, speed, pitch)
            sessions.append(Session(speaker, chapter, voice, tuple(utterances)))
    return sessions


def utterances_of(sessions: Iterable[Session]) -> list[Utterance]:
    return [utterance for session in sessions for utterance in session.utterances]


# ---------------------------------------------------------------- writing


def write_librispeech(sessions: Sequence[Session], folder: Path, workers: int = 0) -> None:
    """folder/<speaker>/<chapter>/<id>.flac and <speaker>-<chapter>.trans.txt (upper case, as
    LibriSpeech writes them); sessions spoken in `workers` threads (0: CPUs + 1, as each
    waits for its espeak-ng)."""
    import soundfile

    def record(session: Session) -> None:
        texts = [utterance.text for utterance in session.utterances]
        effects = [utterance.effects for utterance in session.utterances]
        clips = espeak.render(texts, session.voice, effects)
        for utterance, samples in zip(session.utterances, clips, strict=True):
            path = folder / session.speaker / session.chapter / f"{utterance.utterance_id}.flac"
            soundfile.write(path, samples, espeak.SAMPLE_RATE, format="FLAC", subtype="PCM_16")

    chapters: dict[tuple[str, str], list[Utterance]] = {}
    for session in sessions:
        chapters.setdefault((session.speaker, session.chapter), []).extend(session.utterances)
    for (speaker, chapter), members in chapters.items():
        (folder / speaker / chapter).mkdir(parents=True, exist_ok=True)
        lines = sorted(f"{u.utterance_id} {u.text.upper()}\n" for u in members)
        (folder / speaker / chapter / f"{speaker}-{chapter}.trans.txt").write_text("".join(lines))
    with ThreadPoolExecutor(workers or (os.cpu_count() or 1) + 1) as pool:
        for _ in pool.map(record, sessions):
            pass


def constant_baseline(train: Sequence[str], references: Sequence[str]) -> dict:
    """The constant transcript of lowest word error rate on `references` among the empty
    string, the BASELINE_WORDS most frequent train words and the most frequent train sentence
    (ties: the first in that order)."""
    from models.data.transcripts import word_error_rate

    words = Counter(word for sentence in train for word in sentence.split())
    frequent = sorted(words, key=lambda word: (-words[word], word))
    sentences = Counter(train)
    sentence = min(sentences, key=lambda text: (-sentences[text], text))
    best, lowest = None, float("inf")  # compared unrounded: a tie rounded up is no win
    for transcript in ["", *frequent[:BASELINE_WORDS], sentence]:
        wer = word_error_rate(list(references), [transcript] * len(references))
        if wer < lowest:
            best, lowest = transcript, wer
    return {"transcript": best, "wer": round(float(lowest), 4)}


def _sources() -> dict:
    packages = subprocess.run(
        ["dpkg-query", "-W", "-f=${Package} ${Version}\n", "wordnet-base", "espeak-ng"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split("\n")
    return {
        "text": f"WordNet 3.0 example sentences ({WORDNET}/data.*)",
        "speech": espeak.version(),
        "debian_packages": [line for line in packages if line],
    }


LICENCES = {
    "text": "WordNet 3.0 Licence (Princeton University; /usr/share/doc/wordnet-base/copyright)",
    "speech": "espeak-ng is GPL-3.0-or-later (/usr/share/doc/espeak-ng/copyright); the GPL "
    "covers the program, not the speech it outputs",
}


def sentences_of(split: str, sentences: Sequence[str]) -> list[str]:
    """What the split speaks: the held-out sentences in test_new_sentences, the rest elsewhere."""
    return [s for s in sentences if held_out(s) == (split == "test_new_sentences")]


def _speak_and_convert(sessions: Sequence[Session], out: Path, split: str) -> None:
    """The split's records in out, through a LibriSpeech-layout folder deleted afterwards."""
    from models.data.convert import librispeech

    count = len(utterances_of(sessions))
    build_progress(f"spoken_wordnet: speaking {count} {split} clips")
    folder = out / "librispeech" / split
    write_librispeech(sessions, folder)
    vocabulary = WORDPIECES if split == "train" else None  # learned by the first split
    librispeech.convert([str(folder)], str(out), split, SHARDS.get(split, 1), vocabulary)
    shutil.rmtree(out / "librispeech")


def _description(examples: int, text: dict, plans: dict[str, list[Session]]) -> dict:
    """What dataset_info.json adds to the converter's counts."""
    said = {split: [u.text for u in utterances_of(sessions)] for split, sessions in plans.items()}
    return {
        "source": _sources(),
        "licences": LICENCES,
        "text_filter": {
            "examples": examples,
            "candidates": text["candidates"],
            "sentences": len(text["sentences"]),
            "vocabulary": len(text["vocabulary"]),
            "distinct_sentences_spoken": {split: len(set(said[split])) for split in said},
        },
        "voices": {split: [speaker_name(*v) for v in voices(split)] for split in plans},
        "languages": list(LANGUAGES),
        "variants": {split: list(variants) for split, variants in VARIANTS.items()},
        "settings": {
            "session_utterances": SESSION,
            "speed_words_per_minute": SPEEDS,
            "pitch": PITCHES,
            "silence_seconds": SILENCES,
            "noise": espeak.NOISES,
            "snr_db": SNRS_DB,
            "peak_db": PEAKS_DB,
        },
        "constant_transcript_wer": {
            split: constant_baseline(said["train"], texts)
            for split, texts in said.items()
            if split != "train"
        },
    }


def _write(out: Path) -> None:
    espeak.executable()  # before anything else: one line if espeak-ng is missing
    examples = read_examples()
    text = select_sentences(examples)
    plans = {
        split: plan(split, sentences_of(split, text["sentences"]), voices(split), count)
        for split, count in UTTERANCES.items()
    }
    for split, sessions in plans.items():
        _speak_and_convert(sessions, out, split)
    info = json.loads((out / "dataset_info.json").read_text())
    for split in plans:  # the converter named the folders in the staging directory
        info[f"{split}_statistics"]["inputs"] = [f"librispeech/{split} (deleted)"]
    info.update(_description(len(examples), text, plans))
    (out / "dataset_info.json").write_text(json.dumps(info, indent=1) + "\n")


def prepare() -> str:
    """Directory of the speech records and dataset_info.json, built once into the cache."""
    return build_once(NAME, _write)
