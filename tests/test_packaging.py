"""A wheel (a non-editable install) carries every recipe: configs/ and official/ as package data.

Builds the wheel offline from a copy of the project in tmp_path (so no build/ or *.egg-info
lands in the repository), installs it with --target, and runs the installed copy from a folder
outside the repository with only that copy on PYTHONPATH.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from zoo_testing import PYTHON, REPO

from benchmarks import published

PROJECT_FILES = ["setup.py", "pyproject.toml", "MANIFEST.in"]
PROJECT_DIRS = ["models", "benchmarks", "configs", "official"]

# Runs inside the installed copy: where everything was found, as JSON.
PROBE = """
import importlib.util, json
import benchmarks, models
from benchmarks import published
from models.core import paths, registry

headers = [published.read_header(p) for p in sorted(paths.OFFICIAL_DIR.glob("*.gin"))]
print(json.dumps({
    "models": models.__file__,
    "benchmarks": benchmarks.__file__,
    "configs_dir": str(paths.CONFIGS_DIR),
    "registry_configs_dir": str(registry.CONFIGS_DIR),
    "official_dir": str(paths.OFFICIAL_DIR),
    "published_dir": str(published.OFFICIAL_DIR),
    "v3_32": (paths.CONFIGS_DIR / "slices" / "v3-32.gin").is_file(),
    "official_readme": (paths.OFFICIAL_DIR / "README.md").is_file(),
    "official_recipes": sorted(p.name for p in paths.OFFICIAL_DIR.glob("*.gin")),
    "published": sorted(
        list(row) for model in sorted({h["model"] for h in headers})
        for row in published.published_results(model)
    ),
    "official_module": getattr(importlib.util.find_spec("official"), "origin", None),
}))
"""


def _run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    result = subprocess.run(args, capture_output=True, text=True, env=env, cwd=cwd, timeout=300)
    assert result.returncode == 0, f"{args}\n{result.stdout}\n{result.stderr}"
    return result


def _install_wheel(tmp_path: Path) -> Path:
    """Builds the project's wheel offline from a copy in tmp_path; returns its --target dir."""
    src, dist, site = tmp_path / "src", tmp_path / "dist", tmp_path / "site"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")
    for name in PROJECT_DIRS:
        shutil.copytree(REPO / name, src / name, ignore=ignore)
    for name in PROJECT_FILES:
        shutil.copy2(REPO / name, src / name)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    pip = [PYTHON, "-m", "pip"]
    offline = ["--no-deps", "--no-index", "--no-build-isolation"]
    _run([*pip, "wheel", *offline, "--wheel-dir", str(dist), str(src)], env, tmp_path)
    (wheel,) = dist.glob("*.whl")
    install = ["install", "--no-deps", "--no-index", "--target", str(site)]
    _run([*pip, *install, str(wheel)], env, tmp_path)
    return site


def _repo_recipes() -> dict[str, set[str]]:
    """configs/<family>/*.gin of the repository, by family (slices/ and data/ are not)."""
    return {
        family.name: {p.stem for p in family.glob("*.gin")}
        for family in (REPO / "configs").iterdir()
        if family.is_dir() and family.name not in ("slices", "data")
    }


def _listed_recipes(output: str) -> dict[str, set[str]]:
    """Family -> recipes from `python -m models --list` lines ('NAME FAMILY ...; recipes: a, b')."""
    listed: dict[str, set[str]] = {}
    for line in output.splitlines():
        if "; recipes: " in line:
            family = line.split()[1]
            recipes = line.rsplit("; recipes: ", 1)[1].split(", ")
            listed.setdefault(family, set()).update(r for r in recipes if r != "-")
    return listed


def test_wheel_install_finds_every_recipe(tmp_path):
    site = _install_wheel(tmp_path)
    # official/ is data: never a top-level name, which belongs to Model Garden.
    assert not (site / "official").exists() and not (site / "configs").exists()
    assert not (site / "models" / "_data" / "official" / "__init__.py").exists()

    run_dir = tmp_path / "run"  # outside the repository: nothing there is importable
    run_dir.mkdir()
    env = dict(os.environ, PYTHONPATH=str(site), PYTHONNOUSERSITE="1", TF_CPP_MIN_LOG_LEVEL="3")

    found = json.loads(_run([PYTHON, "-c", PROBE], env, run_dir).stdout.splitlines()[-1])
    for module in ("models", "benchmarks"):
        assert Path(found[module]).is_relative_to(site), found[module]
    data = site / "models" / "_data"
    assert found["configs_dir"] == found["registry_configs_dir"] == str(data / "configs")
    assert found["official_dir"] == found["published_dir"] == str(data / "official")
    assert found["v3_32"] and found["official_readme"]
    official = sorted(REPO.glob("official/*.gin"))
    assert found["official_recipes"] == [p.name for p in official]
    model_names = {published.read_header(path)["model"] for path in official}
    rows = [row for name in model_names for row in published.published_results(name)]  # repo's
    assert found["published"] == sorted(json.loads(json.dumps(rows)))
    assert len(found["published"]) == len(official)
    assert not Path(found["official_module"] or "/").is_relative_to(site)

    listing = _run([PYTHON, "-m", "models", "--list"], env, run_dir).stdout
    repo_recipes = _repo_recipes()
    assert repo_recipes and _listed_recipes(listing) == repo_recipes, listing
