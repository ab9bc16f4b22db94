"""The Transformer's memorisation check through the CLI, then what a user does with the run:
it memorises one batch of the built-in pg_messages (test-split BLEU above 90 on those pairs);
the BLEU it reports is sacreBLEU's command line on the translations it wrote; its export
translates raw strings in a fresh process (which imports only TensorFlow and tensorflow-text)
as the evaluation did; `--mode=predict --input=FILE` translates a file as the export does.
With the target sentences shuffled at every step (tests/breakages.py), the check fails. The
recipe's BLEU target on the full built-in data is `make acceptance`'s (README, "Tests")."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from memorisation import check_fails, check_memorises, export, run_mode
from memorisation_checks import BY_NAME
from one_batch_data import one_batch
from zoo_testing import PYTHON, latest_record

from benchmarks.export_checks import serve_fresh
from models.data.translation import TranslationInput

SACREBLEU = str(Path(PYTHON).parent / "sacrebleu")
SPEC = BY_NAME["transformer"]


@pytest.mark.memorise
def test_memorises_then_scores_exports_and_translates_files(tmp_path, cli_env):
    run = tmp_path / "run"
    check_memorises(SPEC, run, cli_env)
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
    assert record["eval_curve"][-1]["outputs"] == [str(written / f"test-{step}.de")]

    # An evaluation at the same step (greedy here) writes beside the training's, not over it.
    scored = (written / f"test-{step}.de").read_bytes()
    greedy = run_mode(SPEC, run, cli_env, "--mode=eval", "--gin_param=TranslationTask.beam_size=1")
    assert f"wrote {written / f'test-{step}-eval.de'}" in greedy
    assert (written / f"test-{step}.de").read_bytes() == scored

    exported = export(SPEC, run, cli_env)
    data = TranslationInput(data_dir=one_batch(SPEC.data, SPEC.examples))
    sources, _ = data.evaluation_set("test")
    served = serve_fresh(exported, {"source": sources}, cli_env)["translation"]
    # The evaluation batched and padded the same sentences otherwise: rare ties may differ.
    same = sum(ours == theirs for ours, theirs in zip(served, translations, strict=True))
    assert same / len(sources) >= 0.9

    lines = tmp_path / "lines.en"
    lines.write_text("\n".join(sources[:3]) + "\n")
    output = tmp_path / "lines.de"
    run_mode(SPEC, run, cli_env, "--mode=predict", f"--input={lines}", f"--output={output}")
    three = serve_fresh(exported, {"source": sources[:3]}, cli_env)["translation"]
    assert output.read_text().splitlines() == three  # the same function on the same batch


@pytest.mark.memorise
def test_shuffled_targets_fail_the_check(tmp_path, cli_env):
    check_fails(SPEC, tmp_path / "run", cli_env, SPEC.train_breakage)
