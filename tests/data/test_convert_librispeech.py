"""The LibriSpeech converter: a tiny folder in LibriSpeech's layout (FLAC written here) becomes
speech records whose audio, transcripts and sample counts come back, through the records and
through SpeechInput; splits merge into dataset_info.json; every kind of bad input is one line
(exit code 2 from the command line) with nothing written."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import soundfile
import tensorflow as tf
from speech_testing import CLIPS, RATE, write_librispeech
from zoo_testing import one_error_line, run_converter

from models.core.errors import UsageError
from models.data.audio_features import num_frames
from models.data.convert.librispeech import convert
from models.data.speech import SpeechInput
from models.data.speech_schema import FEATURES, normalise_text
from models.data.transcripts import VOCAB_FILE


def _records(folder: Path, split: str) -> list[dict]:
    found = []
    for path in sorted(folder.glob(f"{split}-*")):
        for record in tf.data.TFRecordDataset(str(path)):
            parsed = tf.io.parse_single_example(record, FEATURES)
            found.append({name: value.numpy() for name, value in parsed.items()})
    return sorted(found, key=lambda record: record["unique_id"])


def test_a_librispeech_folder_converts_and_reads_back(tmp_path):
    clips = write_librispeech(tmp_path / "LibriSpeech")
    out = tmp_path / "out"
    stats = convert([str(tmp_path / "LibriSpeech")], str(out), "train", num_shards=2)
    assert sorted(p.name for p in out.iterdir()) == [
        "dataset_info.json",
        "train-00000-of-00002",
        "train-00001-of-00002",
    ]
    records = _records(out, "train")
    assert [r["unique_id"] for r in records] == list(range(len(CLIPS)))
    for record in records:
        text, samples = clips[record["utterance_id"].decode()]
        assert record["transcript"].decode() == text  # as the source wrote it
        assert record["num_samples"] == len(samples)
        assert np.array_equal(np.frombuffer(record["audio"], "<i2"), samples)
        assert record["speaker_id"].decode() == record["utterance_id"].decode().split("-")[0]
    seconds = sum(len(samples) for _, samples in clips.values()) / RATE
    assert stats["examples"] == 6 and stats["speakers"] == 2
    assert stats["seconds"] == pytest.approx(seconds) and stats["max_seconds"] == 3.0
    assert stats["longest_clip"] == "19-198-0002"
    assert stats["target_lengths"] == {"characters": 58}  # the longest text and EOS
    # a second split merges, the first's entries kept
    write_librispeech(tmp_path / "dev", CLIPS[:2])
    convert([str(tmp_path / "dev")], str(out), "validation")
    info = json.loads((out / "dataset_info.json").read_text())
    assert info["splits"] == ["train", "validation"] and info["sample_rate"] == RATE
    assert (info["num_train_examples"], info["num_validation_examples"]) == (6, 2)
    assert info["train_statistics"] == stats and info["train_seconds"] == stats["seconds"]
    assert info["max_seconds"] == 3.0 and info["max_samples"] == 3 * RATE
    # ...and SpeechInput reads the transcripts and every clip's frames back
    data = SpeechInput(data_dir=str(out))
    data.validate()
    utterances, texts = data.evaluation_set("validation")
    assert texts == ["NORTHANGER ABBEY", "CHAPTER ONE"]
    batch = next(iter(data.dataset("validation", 4)))
    frames = batch["feature_mask"].numpy().sum(axis=1)
    expected = [num_frames(len(clips[u][1])) for u in utterances]
    assert list(frames) == [*expected, 0, 0]
    assert data.detokenize(batch["targets"].numpy()[:2]) == ["northanger abbey", "chapter one"]


def test_a_wordpiece_vocabulary_is_learned_with_the_first_split(tmp_path):
    write_librispeech(tmp_path / "in")
    out = tmp_path / "out"
    stats = convert([str(tmp_path / "in")], str(out), "train", wordpiece_vocab_size=80)
    vocab = (out / VOCAB_FILE).read_text().splitlines()
    assert vocab[:3] == ["<pad>", "</s>", "<unk>"] and len(vocab) <= 80
    assert 2 <= stats["target_lengths"]["wordpieces"] <= stats["target_lengths"]["characters"]
    info = json.loads((out / "dataset_info.json").read_text())
    assert info["wordpiece_vocab_size"] == len(vocab)
    with pytest.raises(UsageError, match="already holds wordpiece.vocab"):
        convert([str(tmp_path / "in")], str(out), "test", wordpiece_vocab_size=80)
    test = convert([str(tmp_path / "in")], str(out), "test")
    assert test["target_lengths"] == stats["target_lengths"]
    data = SpeechInput(data_dir=str(out), targets="wordpieces")
    data.validate(["train", "test"])
    assert data.vocab_size == len(vocab)
    batch = next(iter(data.dataset("test", 6)))
    expected = [normalise_text(text) for *_, text in CLIPS]
    assert data.detokenize(batch["targets"].numpy()) == expected
    batch = next(iter(data.dataset("train", 2, seed=0)))
    assert batch["targets"].shape[1] == stats["target_lengths"]["wordpieces"]


def _break(case: str, root: Path) -> None:
    """Spoils the LibriSpeech folder at root in one way."""
    chapter = root / "19" / "198"
    flac, transcript = chapter / "19-198-0001.flac", chapter / "19-198.trans.txt"
    if case == "unreadable":
        flac.write_bytes(b"not audio at all" * 10)
    elif case == "empty":
        flac.write_bytes(b"")
    elif case == "sample rate":
        soundfile.write(flac, np.zeros(8000, np.int16), 8000)
    elif case == "stereo":
        soundfile.write(flac, np.zeros([8000, 2], np.int16), RATE)
    elif case == "cut short":
        data = (chapter / "19-198-0002.flac").read_bytes()
        flac.write_bytes(data[: len(data) // 2])
    elif case == "no audio":
        flac.unlink()
    elif case == "no transcript":
        shutil.copy(flac, chapter / "19-198-0009.flac")
    elif case == "empty transcript":
        transcript.write_text(transcript.read_text().replace("CHAPTER ONE", ""))


BAD = {
    "unreadable": "19-198-0001.flac is not readable audio",
    "empty": "19-198-0001.flac is empty (0 bytes)",
    "sample rate": "19-198-0001.flac is sampled at 8000 Hz, not 16000",
    "stereo": "19-198-0001.flac has 2 channels, not one",
    "cut short": "19-198-0001.flac is not readable audio",
    "no audio": "19-198.trans.txt:2: utterance 19-198-0001 has no audio file",
    "no transcript": "19-198-0009.flac has no transcript",
    "empty transcript": "19-198.trans.txt:2: utterance 19-198-0001 has an empty transcript",
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_one_usage_error_and_nothing_is_written(case, tmp_path):
    write_librispeech(tmp_path / "in")
    _break(case, tmp_path / "in")
    with pytest.raises(UsageError, match=re.escape(BAD[case])) as error:
        convert([str(tmp_path / "in")], str(tmp_path / "out"), "train")
    assert "\n" not in str(error.value)
    assert not (tmp_path / "out").exists()


def test_an_existing_split_or_folder_without_transcripts_is_refused(tmp_path):
    write_librispeech(tmp_path / "in")
    (tmp_path / "nothing").mkdir()
    with pytest.raises(UsageError, match="holds no <speaker>/<chapter>/\\*.trans.txt"):
        convert([str(tmp_path / "nothing")], str(tmp_path / "out"), "train")
    with pytest.raises(UsageError, match="--input .*missing is not a folder"):
        convert([str(tmp_path / "missing")], str(tmp_path / "out"), "train")
    with pytest.raises(UsageError, match="--split 'Train'"):
        convert([str(tmp_path / "in")], str(tmp_path / "out"), "Train")
    convert([str(tmp_path / "in")], str(tmp_path / "out"), "train")
    with pytest.raises(UsageError, match="already holds train shards"):
        convert([str(tmp_path / "in")], str(tmp_path / "out"), "train")


@pytest.mark.slow
def test_cli_converts_and_a_wrong_sample_rate_is_one_line(tmp_path, cli_env):
    write_librispeech(tmp_path / "in")
    args = [f"--input={tmp_path / 'in'}", "--split=validation"]
    result = run_converter("librispeech", *args, f"--output={tmp_path / 'out'}", env=cli_env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "wrote 6 validation clips (0.00 hours, 2 speakers, longest 3.00 s)" in result.stdout
    _break("sample rate", tmp_path / "in")
    result = run_converter("librispeech", *args, f"--output={tmp_path / 'bad'}", env=cli_env)
    assert "is sampled at 8000 Hz, not 16000" in one_error_line(result)
    assert not (tmp_path / "bad").exists()
