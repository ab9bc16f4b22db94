"""`make acceptance` (benchmarks.acceptance): which recipes it trains and from which weights,
its table and plot, and that it names every run that missed."""

from __future__ import annotations

import subprocess
from pathlib import Path

from zoo_testing import PYTHON, REPO, one_error_line

from benchmarks import acceptance
from benchmarks.export_checks import ExportCheck
from benchmarks.records import RunResult


def _result(recipe: str, model: str, reached: bool) -> RunResult:
    family, name = recipe.split("/")
    return RunResult(
        family=family,
        model=model,
        recipe=name,
        slice="cpu-1",
        repeat=0,
        status="success" if reached else "aborted",
        time_to_accuracy_s=42.0 if reached else None,
        epochs=3.0,
        steps=300,
        examples_per_second=1234.0,
        target_metric="accuracy",
        target_value=0.5,
        target_direction="higher",
        error="" if reached else "target not reached",
    )


def test_trains_each_default_and_fine_tunes_bert_from_its_pretraining(tmp_path, monkeypatch):
    """Every recipe trains; the exports of runs that reached their targets are checked where
    the recipe has an export check (benchmarks/export_checks.py); misses of either are named."""
    trained, missing, checked = [], {"bert/squad"}, []
    models = {"resnet": "resnet18", "bert": "bert_tiny"}

    def train(recipe, out, bindings=(), timeout_s=3600):
        trained.append((recipe, bindings))
        return {"recipe": recipe, "model": models[recipe.split("/")[0]], "wall_s": 50.0}

    def load_runs(out):
        return [
            _result(recipe, models[recipe.split("/")[0]], recipe not in missing)
            for recipe, _ in trained
        ]

    def check_export(recipe, model_dir):
        checked.append((recipe, model_dir))
        return ExportCheck("export accuracy", 0.4, 0.45)

    monkeypatch.setattr(acceptance, "train", train)
    monkeypatch.setattr(acceptance, "load_runs", load_runs)
    monkeypatch.setattr(acceptance, "check_export", check_export)
    result = acceptance.accept(tmp_path, ["bert", "resnet"])

    pretrained = tmp_path / "bert/default/bert_tiny/cpu-1/run-0"
    init = (f"train.init_checkpoint = '{pretrained}'",)
    assert trained == [
        ("bert/default", ()),
        ("bert/glosses", init),
        ("bert/squad", init),
        ("resnet/default", ()),
    ]
    assert checked == [("bert/glosses", tmp_path / "bert/glosses/bert_tiny/cpu-1/run-0")]
    assert result["missed"] == [
        "bert/squad (bert_tiny, cpu-1): target not reached",
        "bert/glosses (bert_tiny, cpu-1): export accuracy 0.400 (at least 0.45)",
    ]
    table = (tmp_path / acceptance.TABLE).read_text()
    assert (
        "| resnet/default | resnet18 | accuracy >= 0.5 | yes | 42.0 | 3 epochs | 1,234 | 50 | - |"
        in table
    )
    assert "| 50 | export accuracy 0.400 (at least 0.45) |" in table
    assert "| bert/squad | bert_tiny | accuracy >= 0.5 | NO | - |" in table
    assert Path(result["plot"]).stat().st_size > 0


def test_an_unknown_family_is_one_line(tmp_path, cli_env):
    result = subprocess.run(
        [PYTHON, "-m", "benchmarks.acceptance", "--families=resnt", f"--out={tmp_path}"],
        capture_output=True,
        text=True,
        env=cli_env,
        cwd=REPO,
        timeout=300,
    )
    assert "unknown family 'resnt'" in one_error_line(result)
    assert not list(tmp_path.iterdir())
