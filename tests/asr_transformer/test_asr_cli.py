"""Bad input to the ASR Transformer's CLI is one line and exit 2, with no checkpoint written:
settings the task refuses, a recipe maximum below the data's longest clip, audio flags that
name nothing."""

from __future__ import annotations

import pytest
from zoo_testing import one_error_line, run_model

CASES = {
    "a clip longer than the recipe's maximum": (
        ["--gin_param=speech_input.max_seconds = 1.0"],
        "speech_input.max_seconds",
    ),
    "a beam of 0": (
        ["--gin_param=SpeechRecognitionTask.beam_size = 0"],
        "error: SpeechRecognitionTask.beam_size=0: at least 1 (1: greedy)",
    ),
    "a CTC weight over 1": (
        ["--gin_param=SpeechRecognitionTask.ctc_weight = 1.5"],
        "error: SpeechRecognitionTask.ctc_weight=1.5: from 0 to 1",
    ),
    "an audio file that is not there": (
        ["--mode=predict", "--audio=/nowhere/a.wav"],
        "error: --audio=/nowhere/a.wav: no such file",
    ),
    "audio and text at once": (
        ["--mode=predict", "--audio=/nowhere/a.wav", "--input=/nowhere/a.txt"],
        "error: --mode=predict takes one of --image (a picture), --input (text), --audio",
    ),
    "targets of another kind": (
        ["--gin_param=speech_input.targets = 'phonemes'"],
        "speech_input.targets",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_is_one_line(case, tmp_path, cli_env):
    args, expected = CASES[case]
    line = one_error_line(run_model("asr_transformer", tmp_path / "run", *args, env=cli_env))
    assert line.startswith("error: ") and expected in line
    assert not list((tmp_path / "run").glob("ckpt-*"))
