"""TranslationTask's scoring: the BLEU an evaluation reports equals sacreBLEU's command line on
the translations and references it writes (its loss: tests/tasks/test_sequence_outputs.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from zoo_testing import PYTHON

from models.core.settings import EvalPlan
from models.core.task import EvalRun
from models.transformer.task import TranslationTask

SACREBLEU = str(Path(PYTHON).parent / "sacrebleu")


def test_bleu_equals_sacrebleus_command_line_on_the_written_files(tmp_path):
    """Translations: the test split's own references, tokenised, every third cut short and
    padding pairs mixed in; the score must be what `sacrebleu REF -i OUT` says."""
    task = TranslationTask(model="transformer_tiny")
    _, references = task.input.evaluation_set("test")
    ids = task.input.tokenizer().tokenize(references).to_list()
    rows = [row[: len(row) // 2] if i % 3 == 0 else row for i, row in enumerate(ids)]
    width = max(map(len, rows)) + 1
    padded = np.zeros([len(rows) + 2, width], np.int32)
    for i, row in enumerate(rows):
        padded[i, : len(row) + 1] = [*row, task.input.eos_id]
    outputs = {"unique_id": np.array([*range(len(rows)), -1, -1]), "translation": padded}
    plan = EvalPlan("validation", "validation", "test", 64, 10, -1)
    state = task.aggregate_logs(None, outputs, plan)
    task.eval_run = EvalRun(step=7, directory=str(tmp_path))
    bleu = task.reduce_aggregated_logs(state, plan)["bleu"]
    assert 30 < bleu < 95
    command = [SACREBLEU, str(tmp_path / "test-reference.de"), "-i", str(tmp_path / "test-7.de")]
    printed = subprocess.run([*command, "-b", "-w", "4"], capture_output=True, text=True)
    assert printed.returncode == 0, printed.stderr
    assert float(printed.stdout) == pytest.approx(bleu, abs=1e-4)


def test_loss_evaluations_translate_nothing():
    task = TranslationTask(model="transformer_tiny")
    plan = EvalPlan("loss", "loss", "validation", 64, 10, -1)
    assert task.reduce_aggregated_logs(None, plan) == {}


def test_a_line_longer_than_the_model_reads_gets_a_note(capsys):
    """--mode=predict translates such a line from its first max_length - 1 tokens; it says
    so, naming the line, rather than cutting it without a word."""
    task = TranslationTask(model="transformer_tiny")
    task._note_cut_lines(["a short line", "word " * 20_000, "another"])
    note = capsys.readouterr().err.strip().splitlines()[-1]  # (after a first build's line)
    assert note.startswith("note: line 2 has ") and note.endswith(
        f"tokens; the model translates its first {task.input.max_length - 1}"
    )
