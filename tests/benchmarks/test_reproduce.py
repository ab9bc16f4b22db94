"""Every official recipe resolves and matches its published row (reproduce --dry_run)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from zoo_testing import PYTHON, REPO

from benchmarks import reproduce
from models.core.errors import UsageError

RECIPES = sorted((REPO / "official").glob("*.gin"))
# The project's reference facts; CI and developers have shared/ beside the checkout.
REFERENCE = REPO.parent / "shared" / "reference" / "published_results.md"
PUBLISHED = REFERENCE.read_text() if REFERENCE.exists() else None


@pytest.fixture()
def published() -> str:
    if PUBLISHED is None:
        pytest.skip(f"{REFERENCE} is not beside this checkout")
    return PUBLISHED


def test_there_is_a_recipe_per_published_resnet50_row(published):
    rows = [line for line in published.splitlines() if "| ResNet-50 |" in line]
    assert len(RECIPES) == len(rows) == 9


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.stem)
def test_recipe_matches_its_header(path: Path):
    header = reproduce.read_header(path)
    reproduce.resolve(path, header)
    assert reproduce.check_matches(path, header) == []


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.stem)
def test_header_matches_reference_row(path: Path, published):
    header = reproduce.read_header(path)
    row = f"| {header['round']} | ResNet-50 | {header['slice']} | {header['global_batch']} |"
    assert row in published and f"| {header['minutes']} |" in published.split(row)[1][:200]


def test_mismatched_batch_is_reported(tmp_path):
    source = RECIPES[0].read_text() + "train.global_batch_size = 7\n"
    bad = tmp_path / "bad.gin"
    bad.write_text(source)
    header = reproduce.read_header(bad)
    reproduce.resolve(bad, header)
    assert any("global batch 7" in p for p in reproduce.check_matches(bad, header))


def test_header_without_minutes_is_a_usage_error(tmp_path):
    bad = tmp_path / "bad.gin"
    bad.write_text("# published.family: resnet\ninclude 'resnet/resnet50_imagenet.gin'\n")
    with pytest.raises(UsageError, match="published.model"):
        reproduce.read_header(bad)


def test_dry_run_json_prints_command_and_config():
    recipe = "official/resnet50_v06_v3-32.gin"
    result = subprocess.run(
        [PYTHON, "-m", "benchmarks.reproduce", recipe, "--dry_run", "--json", "--tpu=my-tpu"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
    )
    out = json.loads(result.stdout)
    assert out["matches_published"] and "--slice=v3-32" in out["command"]
    assert (
        "--tpu=my-tpu" in out["command"]
        and "train.global_batch_size = 4096" in out["resolved_config"]
    )
    assert result.stderr == ""
