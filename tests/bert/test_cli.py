"""BERT's bad input through the CLI: one `error:` line, exit 2, nothing written."""

from __future__ import annotations

import pytest
from zoo_testing import run_model

CASES = {
    "a model shorter than the data": (
        ["--gin_param=bert_encoder.max_sequence_length = 32"],
        "error: pretraining_input.seq_length = 64 is longer than the model's 32 positions",
    ),
    "a missing vocabulary": (
        ["--gin_file=bert/glosses.gin", "--gin_param=sentence_input.vocab = '/nowhere/vocab.txt'"],
        "error: vocabulary /nowhere/vocab.txt is not a file",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_is_one_line(case, tmp_path, cli_env):
    args, expected = CASES[case]
    result = run_model("bert", tmp_path / "run", *args, env=cli_env)
    assert result.returncode == 2, result.stderr[-3000:]
    assert result.stderr.strip().splitlines()[-1].startswith(expected)
    assert "Traceback" not in result.stderr
    assert not list((tmp_path / "run").glob("ckpt-*"))
