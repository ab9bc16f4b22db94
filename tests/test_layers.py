"""The layers (README "Architecture"): pyproject.toml's import-linter contracts hold on the
code, break when a module imports across them, and name every family."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
NOT_FAMILIES = {"core", "data", "tasks", "_data", "__pycache__"}


def lint_imports(cwd: Path) -> subprocess.CompletedProcess:
    """lint-imports with pyproject.toml's contracts on the packages under cwd."""
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_the_code_keeps_every_contract():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.fixture(scope="module")
def tree_copy(tmp_path_factory) -> Path:
    """The packages' Python files and pyproject.toml, copied: a tree to break."""
    copy = tmp_path_factory.mktemp("layers")
    for package in ("models", "benchmarks"):
        shutil.copytree(ROOT / package, copy / package, ignore=_not_python)
    shutil.copy(ROOT / "pyproject.toml", copy)
    return copy


def _not_python(folder: str, names: list[str]) -> list[str]:
    return [n for n in names if not n.endswith(".py") and not Path(folder, n).is_dir()]


@pytest.mark.parametrize(
    ("module", "source", "broken"),
    [
        ("models/core/reads_data.py", "from models.data import records", "models.core.reads_data"),
        ("models/data/runs_a_task.py", "import models.tasks.detection", "models.data.runs_a_task"),
        ("models/deeplab/borrows.py", "from models.resnet import model", "models.deeplab.borrows"),
        ("models/data/loops.py", "from models.data import folder", "models/data has no import"),
    ],
    ids=["core-imports-data", "data-imports-tasks", "family-imports-family", "data-cycle"],
)
def test_a_module_across_a_layer_breaks_a_contract(tree_copy, module, source, broken):
    path = tree_copy / module
    path.write_text(f"{source}\n")
    extra = None
    if module.endswith("loops.py"):  # a cycle needs the other half: records -> loops -> folder
        extra = tree_copy / "models/data/records.py"
        original = extra.read_text()
        extra.write_text(original + "\nfrom models.data import loops  # noqa\n")
    try:
        result = lint_imports(tree_copy)
    finally:
        path.unlink()
        if extra is not None:
            extra.write_text(original)
    assert result.returncode == 1, result.stdout
    assert "1 broken" in result.stdout
    assert broken in result.stdout


def test_the_families_layer_names_every_family():
    """A new family (a package under models/ besides core, data and tasks) joins the layer of
    independent families, or lint-imports would not check it."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c for c in config["contracts"] if c["id"] == "layers")["layers"]
    listed = {name.strip() for layer in layers for name in layer.split("|")}
    families = {
        f"models.{path.name}"
        for path in (ROOT / "models").iterdir()
        if path.is_dir() and path.name not in NOT_FAMILIES
    }
    assert families - listed == set()
