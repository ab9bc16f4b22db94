"""The built-in real-speech test set: CMU Sphinx's 12 transcribed recordings (Debian's
pocketsphinx-testdata, which `make` installs) as 16 kHz speech records in split test, with the
WER of the best constant transcript."""

from __future__ import annotations

import glob
import json
import os

import pytest

from models.core.errors import UsageError
from models.data.builtin import cmu_recordings
from models.data.speech_schema import SAMPLE_RATE, normalise_text


def test_missing_package_is_one_line_naming_the_install_command(tmp_path, monkeypatch):
    install = "apt-get install pocketsphinx-testdata"
    monkeypatch.setattr(cmu_recordings, "DATA", tmp_path / "missing")
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(UsageError, match=f"install it with `{install}`") as error:
        cmu_recordings._write(out)
    assert "\n" not in str(error.value) and not list(out.iterdir())  # nothing written


def test_sphinx_transcription_lines_with_and_without_sentence_marks(tmp_path):
    path = tmp_path / "t"
    path.write_text("<s> Ten of  clubs  </s> (001)\n\ngo forward (a-0870)\n")
    assert cmu_recordings.read_transcription(path) == [
        ("001", "ten of clubs"),
        ("a-0870", "go forward"),
    ]
    path.write_text("no id here\n")
    with pytest.raises(UsageError, match=r"t:1 is not a Sphinx transcription line"):
        cmu_recordings.read_transcription(path)


def test_builds_twelve_real_clips_in_split_test(read_examples, value_of):
    folder = cmu_recordings.prepare()
    info = json.loads(open(os.path.join(folder, "dataset_info.json")).read())
    assert info["splits"] == ["test"] and info["num_test_examples"] == 12
    assert info["sample_rate"] == SAMPLE_RATE and info["max_seconds"] == pytest.approx(7.1)
    assert 39 < info["test_seconds"] < 40
    assert info["source"]["debian_package"] == "pocketsphinx-testdata"
    assert info["licence"].startswith("BSD-2-clause")
    baseline = info["constant_transcript_wer"]["test"]
    assert baseline == {"transcript": "of", "wer": 0.9604, "chosen_on": baseline["chosen_on"]}
    examples = read_examples(glob.glob(os.path.join(folder, "test-*")))
    said = {
        value_of(e, "utterance_id").decode(): value_of(e, "transcript").decode() for e in examples
    }
    assert len(said) == 12 and set(said) == set(info["utterances"])
    assert said["goforward-goforward-001"] == "GO FORWARD TEN METERS"
    assert said["cards-cards-005"] == "EIGHT OF SPADES FOUR OF CLUBS SEVEN OF HEARTS"
    assert normalise_text(said["tidigits-dhd-2934z"]) == "two nine three four zero"
    speakers = {value_of(e, "speaker_id").decode() for e in examples}
    assert speakers == {"librivox", "cards", "goforward", "tidigits"}
    for example in examples:
        samples = value_of(example, "num_samples")
        assert len(value_of(example, "audio")) == 2 * samples  # int16 at 16 kHz
        assert SAMPLE_RATE < samples <= 7.1 * SAMPLE_RATE
