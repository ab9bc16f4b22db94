"""The ASR Transformer's memorisation check through the CLI, then what a user does with the run:
it memorises one batch of the built-in spoken_wordnet (WER under 0.05 on those clips); the WER
it reports is jiwer's on the transcripts it wrote; its export transcribes WAV files in a fresh
process (which imports only TensorFlow and tensorflow-text) as the evaluation did;
`--mode=predict --audio=FILE` prints what the export answers; `--mode=eval` reads a folder of
test clips only (the built-in real speech); audio it cannot read is one line
and exit 2, with nothing written. With the transcripts shuffled at every step
(tests/breakages.py), the check fails. The recipe's WER target on the full built-in data is
`make acceptance`'s (README, "Tests")."""

from __future__ import annotations

import io
from pathlib import Path

import jiwer
import numpy as np
import pytest
import soundfile
from memorisation import check_fails, check_memorises, command, export, run_mode
from memorisation_checks import BY_NAME
from one_batch_data import one_batch
from zoo_testing import latest_record, one_error_line

from benchmarks.export_checks import serve_fresh
from models.data import builtin
from models.data.audio_files import wav_bytes
from models.data.speech import read_clips

SPEC = BY_NAME["asr_transformer"]
RATE = 16000


def _words(path: Path) -> list[str]:
    """The transcripts of a Kaldi text file (`<utterance id> <words>` a line), in order."""
    return [line.partition(" ")[2] for line in path.read_text().splitlines()]


def _wav(samples: np.ndarray, rate: int = RATE, subtype: str = "PCM_16", fmt="WAV") -> bytes:
    buffer = io.BytesIO()
    soundfile.write(buffer, samples, rate, subtype=subtype, format=fmt)
    return buffer.getvalue()


@pytest.mark.memorise
def test_memorises_then_scores_exports_and_transcribes_wav_files(tmp_path, cli_env):
    run = tmp_path / "run"
    check_memorises(SPEC, run, cli_env)
    record = latest_record(run)
    written = run / "evaluations" / "validation"
    step = max(int(p.stem.split("-")[1]) for p in written.glob("validation-[0-9]*.txt"))
    hypotheses = _words(written / f"validation-{step}.txt")
    references = _words(written / "validation-reference.txt")
    assert jiwer.wer(references, hypotheses) == pytest.approx(record["final_metrics"]["wer"])

    exported = export(SPEC, run, cli_env)
    clips = read_clips(sorted(Path(one_batch(SPEC.data, SPEC.examples)).glob("validation-*")))
    wavs = [wav_bytes(clip) for clip in clips]
    served = serve_fresh(exported, {"wav": wavs}, cli_env)["transcript"]
    # The evaluation padded the same clips otherwise (to the recipe's longest): at most a rare
    # tie may differ
    same = sum(ours == theirs for ours, theirs in zip(served, hypotheses, strict=True))
    assert same / len(wavs) >= 0.875, (served, hypotheses)

    audio = tmp_path / "clip.wav"
    audio.write_bytes(wavs[0])
    printed = run_mode(SPEC, run, cli_env, "--mode=predict", f"--audio={audio}")
    assert printed.splitlines()[-2] == served[0]

    # A folder of test clips only (real speech; no training split) evaluates by name, its
    # transcripts beside their own references
    real = builtin.prepare("cmu_recordings")
    split, longest = (
        '--gin_param=evaluation.split = "test"',
        "--gin_param=speech_input.max_seconds = 7.2",
    )
    printed = run_mode(SPEC, run, cli_env, f"--data_dir={real}", "--mode=eval", split, longest)
    assert "wer=" in printed.splitlines()[-1]
    assert len(_words(written / f"test-{step}-eval.txt")) == 12
    assert len(_words(written / "test-reference.txt")) == 12

    checkpoints = sorted(p.name for p in run.iterdir())
    long_clip = np.zeros(RATE * 4, np.int16)  # over the data's longest clip (3.5 s)
    bad = {
        "empty.wav": (b"", "is empty (0 bytes)"),
        "words.wav": (b"not audio at all", "is not readable audio"),
        "8k.wav": (_wav(long_clip[:8000], rate=8000), "is sampled at 8000 Hz, not 16000"),
        "stereo.wav": (_wav(np.zeros((RATE, 2), np.int16)), "has 2 channels, not one"),
        "flac.wav": (_wav(long_clip[:RATE], fmt="FLAC"), "not 16-bit PCM WAV"),
        "silence.wav": (_wav(long_clip[:100]), "is empty: 100 samples"),
        "long.wav": (_wav(long_clip), "over the recipe's longest clip"),
    }
    for name, (data, expected) in bad.items():
        (tmp_path / name).write_bytes(data)
        result = _run(run, cli_env, "--mode=predict", f"--audio={tmp_path / name}")
        line = one_error_line(result)
        assert result.returncode == 2 and expected in line, (name, line)
    assert sorted(p.name for p in run.iterdir()) == checkpoints


def _run(run: Path, env: dict, *args: str):
    import subprocess

    return subprocess.run(
        [*command(SPEC, run), *args], capture_output=True, text=True, env=env, timeout=600
    )


@pytest.mark.memorise
def test_shuffled_transcripts_fail_the_check(tmp_path, cli_env):
    check_fails(SPEC, tmp_path / "run", cli_env, SPEC.train_breakage)
