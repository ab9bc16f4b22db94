"""The built-in speech task: WordNet's example sentences spoken by espeak-ng (Debian's
espeak-ng, which `make` installs) in voices split between train, validation and test, as
LibriSpeech-layout FLAC converted to 16 kHz speech records, with the WER of the best constant
transcript."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
import soundfile

from models.core.errors import UsageError
from models.data.builtin import espeak
from models.data.builtin.spoken_wordnet import (
    LANGUAGES,
    UTTERANCES,
    VARIANTS,
    VOCABULARY,
    _write,
    candidate,
    constant_baseline,
    held_out,
    plan,
    read_examples,
    select_sentences,
    utterances_of,
    voices,
    write_librispeech,
)

SENTENCES = ("the news was very bad", "how will the game turn out", "i don't care")


def test_missing_espeak_is_one_line_naming_the_install_command(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(UsageError, match=r"install it with `apt-get install espeak-ng`") as error:
        _write(tmp_path)
    assert "\n" not in str(error.value) and not list(tmp_path.iterdir())  # nothing written


def test_plain_short_sentences_pass_the_filter():
    assert candidate("the dog barked all night") == "the dog barked all night"
    assert candidate("He takes the cake for chutzpah!") == "he takes the cake for chutzpah"
    assert candidate("I don't know, they said.") == "i don't know they said"
    for bad in (
        "wild talk",  # too short
        "one two three four five six seven eight nine",  # too long
        "the almost self-conscious flatness",  # a hyphen
        "he bought 2 dogs",  # a digit
        "he rented a TV set",  # an acronym
        "the x axis of the graph",  # a lone letter
        "the dog--a big one",
        "he said 'no' twice",  # quotes
    ):
        assert candidate(bad) is None, bad


def test_wordnet_sentences_use_a_small_vocabulary():
    from models.data.speech_schema import normalise_text

    text = select_sentences(read_examples())
    sentences, vocabulary = text["sentences"], set(text["vocabulary"])
    assert 600 < len(sentences) < 1000 and len(sentences) == len(set(sentences))
    assert 400 < len(vocabulary) <= VOCABULARY < text["candidates"] / 10
    for sentence in sentences:
        assert re.fullmatch(r"[a-z']+( [a-z']+){2,7}", sentence), sentence
        assert normalise_text(sentence) == sentence
        assert set(sentence.split()) <= vocabulary
    new = [sentence for sentence in sentences if held_out(sentence)]
    assert 0.06 < len(new) / len(sentences) < 0.14


def test_voices_are_split_disjointly_and_exist_in_espeak():
    variants = [set(VARIANTS[split]) for split in ("train", "validation", "test")]
    assert sum(map(len, variants)) == len(set().union(*variants))  # no variant in two splits
    speakers = {split: {f"{lang}+{v}" for lang, v in voices(split)} for split in UTTERANCES}
    assert not speakers["train"] & (speakers["validation"] | speakers["test"])
    assert not speakers["validation"] & speakers["test"]
    assert speakers["test_new_sentences"] == speakers["test"]
    listing = subprocess.run(
        ["espeak-ng", "--voices=variant"], capture_output=True, text=True, check=True
    ).stdout
    assert set().union(*variants) <= set(re.findall(r"!v/(\S+)", listing))
    english = subprocess.run(
        ["espeak-ng", "--voices=en"], capture_output=True, text=True, check=True
    ).stdout
    assert set(LANGUAGES) <= {line.split()[1] for line in english.splitlines()[1:]}


def test_every_variant_changes_the_voice():
    """espeak-ng ignores a variant it does not know: each must sound unlike the rest."""
    spoken = {}
    for variant in ("", *(v for variants in VARIANTS.values() for v in variants)):
        voice = espeak.Voice("en-us", variant, 170, 50)
        spoken.setdefault(espeak.run("a full voice.", voice).tobytes(), []).append(variant)
    assert [names for names in spoken.values() if len(names) > 1] == []


def test_plan_cycles_sentences_and_voices_in_sessions_deterministically():
    two = [("en-us", "m3"), ("en-gb-scotland", "f2")]
    sessions = plan("validation", SENTENCES, two, 12)
    assert sessions == plan("validation", SENTENCES, two, 12)
    assert sessions != plan("test", SENTENCES, two, 12)  # seeded by the split
    utterances = utterances_of(sessions)
    assert all(n == 4 for n in np.unique([u.text for u in utterances], return_counts=True)[1])
    assert len({u.utterance_id for u in utterances}) == 12
    assert sorted(len(s.utterances) for s in sessions) == [1, 1, 5, 5]  # 6 a voice
    assert {s.speaker for s in sessions} == {"en_us_m3", "en_gb_scotland_f2"}
    for s in sessions:
        assert s.chapter == f"{s.voice.speed}{s.voice.pitch:02d}"
        assert 130 <= s.voice.speed <= 200 and 30 <= s.voice.pitch <= 70
        for u in s.utterances:
            assert u.utterance_id.startswith(f"{s.speaker}-{s.chapter}-")
            assert 15 <= u.effects.snr_db <= 30 and u.effects.noise in ("white", "pink")


def _session(texts, variant="m3", speed=200):
    voice = espeak.Voice("en-us", variant, speed, 50)
    effects = plan("train", texts, [("en-us", variant)], len(texts))[0].utterances
    return voice, [u.effects for u in effects[: len(texts)]]


def test_a_session_is_cut_into_its_sentences():
    for variant, speed in (("m3", 200), ("Marco", 130), ("klatt4", 170)):  # Marco: echo 80%
        voice = espeak.Voice("en-us", variant, speed, 50)
        together = espeak.speak(SENTENCES, voice)
        alone = [espeak.trim(espeak.run(f"{text}.", voice)) for text in SENTENCES]
        assert len(together) == len(SENTENCES) and np.array_equal(together[0], alone[0])
        for a, b in zip(together, alone, strict=True):
            assert abs(len(a) - len(b)) < 50  # the voice's state carried over: a few samples


def test_rendering_is_16khz_int16_and_deterministic():
    voice, effects = _session(SENTENCES[:2])
    clips = espeak.render(SENTENCES[:2], voice, effects)
    for samples, e in zip(clips, effects, strict=True):
        assert samples.dtype == np.int16 and samples.ndim == 1
        assert 0.6 + e.lead + e.tail < samples.size / 16000 < 3.5
        assert abs(np.abs(samples).max() / 32768 - e.peak) < 1e-3
    again = espeak.render(SENTENCES[:2], voice, effects)
    assert all(np.array_equal(a, b) for a, b in zip(clips, again, strict=True))
    noisier = [e.__class__(**{**e.__dict__, "seed": e.seed + 1}) for e in effects]
    assert not np.array_equal(clips[0], espeak.render(SENTENCES[:2], voice, noisier)[0])


def test_librispeech_folder_is_the_same_bytes_twice(tmp_path):
    sessions = plan("train", SENTENCES, [("en-us", "m3"), ("en-029", "klatt4")], 4)
    write_librispeech(sessions, tmp_path / "a", workers=2)
    write_librispeech(sessions, tmp_path / "b", workers=1)
    files = sorted(path.relative_to(tmp_path / "a") for path in (tmp_path / "a").rglob("*.*"))
    assert len(files) == 4 + len({(s.speaker, s.chapter) for s in sessions})
    for name in files:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    s, u = sessions[0], sessions[0].utterances[0]
    audio, rate = soundfile.read(tmp_path / "a" / s.speaker / s.chapter / f"{u.utterance_id}.flac")
    assert rate == 16000 and audio.ndim == 1
    trans = tmp_path / "a" / s.speaker / s.chapter / f"{s.speaker}-{s.chapter}.trans.txt"
    assert f"{u.utterance_id} {u.text.upper()}" in trans.read_text().splitlines()


def test_librispeech_folder_converts_to_the_spoken_samples(tmp_path):
    import tensorflow as tf

    from models.data.convert.librispeech import convert
    from models.data.speech_schema import FEATURES

    sessions = plan("test", SENTENCES, [("en-gb-x-rp", "f5")], 3)
    write_librispeech(sessions, tmp_path / "flac")
    convert([str(tmp_path / "flac")], str(tmp_path / "records"), "test")
    (session,) = sessions
    clips = espeak.render([u.text for u in session.utterances], session.voice,
                          [u.effects for u in session.utterances])  # fmt: skip
    spoken = {u.utterance_id: (u, c) for u, c in zip(session.utterances, clips, strict=True)}
    records = tf.data.TFRecordDataset(str(tmp_path / "records" / "test-00000-of-00001"))
    for record in records:
        example = {k: v.numpy() for k, v in tf.io.parse_single_example(record, FEATURES).items()}
        utterance, samples = spoken.pop(example["utterance_id"].decode())
        assert np.frombuffer(example["audio"], "<i2").tolist() == samples.tolist()
        assert example["transcript"].decode() == utterance.text.upper()
        assert example["speaker_id"].decode() == "en_gb_x_rp_f5"
    assert not spoken


def test_constant_baseline_picks_the_best_transcript():
    train = ["the dog ran", "the cat sat", "the dog sat", "the dog ran"]
    # "the dog ran": 1 + 2 of 6 words wrong; a word: 5 of 6; "": 6 of 6.
    assert constant_baseline(train, ["the cat ran", "a dog sat"]) == {
        "transcript": "the dog ran",
        "wer": 0.5,
    }
    assert constant_baseline(train, ["dog", "dog dog"]) == {"transcript": "dog", "wer": 0.3333}
    assert constant_baseline(train, ["a bird flew"]) == {"transcript": "", "wer": 1.0}


@pytest.mark.slow
def test_builtin_speech_records_and_baselines():
    import tensorflow as tf

    from models.data import builtin
    from models.data.speech_schema import FEATURES, SAMPLE_RATE, normalise_text

    folder = Path(builtin.prepare("spoken_wordnet"))
    info = json.loads((folder / "dataset_info.json").read_text())
    assert info["sample_rate"] == SAMPLE_RATE == 16000
    assert not (folder / "librispeech").exists()  # the FLAC staging folder is gone
    speakers = {}
    for split, count in UTTERANCES.items():
        assert info[f"num_{split}_examples"] == count
        records = tf.data.TFRecordDataset(sorted(map(str, folder.glob(f"{split}-*-of-*"))))
        speakers[split] = set()
        for record in records.take(count if split != "train" else 300):
            example = tf.io.parse_single_example(record, FEATURES)
            transcript = example["transcript"].numpy().decode()
            assert transcript == transcript.upper() and normalise_text(transcript)
            assert example["num_samples"] * 2 == len(example["audio"].numpy())
            speakers[split].add(example["speaker_id"].numpy().decode())
        if split != "train":
            baseline = info["constant_transcript_wer"][split]
            assert 0.9 < baseline["wer"] <= 1.0 and isinstance(baseline["transcript"], str)
    assert speakers["validation"] <= set(info["voices"]["validation"])
    assert not set(info["voices"]["train"]) & set(info["voices"]["validation"])
    assert not speakers["train"] & (speakers["validation"] | speakers["test"])
    assert info["max_seconds"] < 5 and 1.0 < info["train_seconds"] / UTTERANCES["train"] < 2.5
