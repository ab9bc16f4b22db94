"""The Transformer's acceptance runs through the CLI: the default recipe trains on the built-in
pg_messages to its BLEU target on the test split; the BLEU it reports is sacreBLEU's command
line on the translations it wrote; its export translates raw strings in a fresh process (which
imports only TensorFlow and tensorflow-text) as the evaluation did; and `--mode=predict
--input=FILE` translates a file."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from family_checks import check_reaches_target
from zoo_testing import PYTHON, latest_record, run_model, serve_fresh

from models.data.translation import TranslationInput

SACREBLEU = str(Path(PYTHON).parent / "sacrebleu")


@pytest.mark.target
def test_trains_to_bleu_target_then_exports_and_translates_files(tmp_path, cli_env):
    run = tmp_path / "run"
    check_reaches_target("transformer", run, cli_env)
    record = latest_record(run)
    written = run / "evaluations" / "validation"
    step = max(int(p.stem.split("-")[1]) for p in written.glob("test-[0-9]*.de"))
    translations = (written / f"test-{step}.de").read_text().splitlines()
    command = [
        SACREBLEU,
        str(written / "test-reference.de"),
        "-i",
        str(written / f"test-{step}.de"),
    ]
    printed = subprocess.run([*command, "-b", "-w", "4"], capture_output=True, text=True)
    assert float(printed.stdout) == pytest.approx(record["final_metrics"]["bleu"], abs=1e-4)

    result = run_model("transformer", run, "--mode=export", env=cli_env)
    assert result.returncode == 0, result.stderr[-3000:]
    export = re.search(r"exported SavedModel to (\S+)", result.stdout).group(1)
    sources, _ = TranslationInput().evaluation_set("test")  # the records' (test.en less long)
    served = serve_fresh(export, {"source": sources}, cli_env)["translation"]
    # The evaluation batched and padded the same sentences otherwise: rare ties may differ.
    same = sum(ours == theirs for ours, theirs in zip(served, translations, strict=True))
    assert same / len(sources) >= 0.95

    lines = tmp_path / "lines.en"
    lines.write_text("\n".join(sources[:3]) + "\n")
    output = tmp_path / "lines.de"
    args = ("--mode=predict", f"--input={lines}", f"--output={output}")
    result = run_model("transformer", run, *args, env=cli_env)
    assert result.returncode == 0, result.stderr[-3000:]
    three = serve_fresh(export, {"source": sources[:3]}, cli_env)["translation"]
    assert output.read_text().splitlines() == three  # the same function on the same batch
