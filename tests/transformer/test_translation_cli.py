"""The Transformer's bad input through the CLI: one `error:` line, exit 2, nothing written.
(The converter's and the input's own refusals: tests/data/test_parallel_text.py and
test_translation.py.)"""

from __future__ import annotations

import pytest
from zoo_testing import one_error_line, run_model

CASES = {
    "a file to translate that is not there": (
        ["--mode=predict", "--input=/nowhere/lines.en"],
        "error: --input=/nowhere/lines.en: no such file",
    ),
    "a picture and a text at once": (
        ["--mode=predict", "--input=/nowhere/lines.en", "--image=/nowhere/a.jpg"],
        "error: --mode=predict takes one of --image (a picture), --input (text), --audio",
    ),
    "an input longer than the data allows": (
        ["--gin_param=translation_input.max_length = 32"],
        "says max_length = 64 but translation_input.max_length = 32",
    ),
    "a schedule without its warmup": (
        ["--gin_param=learning_rate.warmup_examples = None"],
        "error: learning_rate.decay='rsqrt' needs a warmup",
    ),
    "a beam of 0": (
        ["--gin_param=TranslationTask.beam_size = 0"],
        "error: TranslationTask.beam_size=0: at least 1 (1: greedy)",
    ),
    "another family's recipe": (
        ["--gin_file=dcgan/default.gin"],
        "a dcgan model: run it with python -m models.dcgan",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_is_one_line(case, tmp_path, cli_env):
    args, expected = CASES[case]
    line = one_error_line(run_model("transformer", tmp_path / "run", *args, env=cli_env))
    assert line.startswith("error: ") and expected in line
    assert not list((tmp_path / "run").glob("ckpt-*"))


def test_predict_without_a_trained_model_is_one_line(tmp_path, cli_env):
    lines = tmp_path / "lines.en"
    lines.write_text("could not open file\n")
    result = run_model(
        "transformer", tmp_path / "run", "--mode=predict", f"--input={lines}", env=cli_env
    )
    assert "checkpoint" in one_error_line(result)


@pytest.mark.slow
def test_a_shard_cut_short_met_mid_run_is_named(tmp_path, cli_env):
    """The pre-flight check reads each shard's first records only; the pipeline meets the cut
    later, where TensorFlow's error gives a byte offset alone: the line names the shard."""
    import shutil
    from pathlib import Path

    from models.data import builtin

    data = Path(shutil.copytree(builtin.prepare("pg_messages"), tmp_path / "data"))
    for shard in sorted(data.glob("train-*")):
        shard.write_bytes(shard.read_bytes()[: shard.stat().st_size // 2 + 7])
    args = (f"--data_dir={data}", "--mode=train", "--steps=400")
    line = one_error_line(run_model("transformer", tmp_path / "run", *args, env=cli_env))
    assert line.startswith(f"error: truncated TFRecord shard {data}/train-0000")
    assert "is cut short; rewrite or delete it" in line
