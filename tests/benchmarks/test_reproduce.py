"""Every official recipe resolves and matches its published row (reproduce --dry_run)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import gin
import pytest
from zoo_testing import PYTHON, REPO

from benchmarks import reproduce
from models.core.errors import UsageError

RECIPES = sorted((REPO / "official").glob("*.gin"))
# The project's reference facts; CI and developers have shared/ beside the checkout.
REFERENCE = REPO.parent / "shared" / "reference" / "published_results.md"
PUBLISHED = REFERENCE.read_text() if REFERENCE.exists() else None


# The reference's name of each family that official/ reproduces.
MODELS = {
    "resnet": "ResNet-50",
    "mask_rcnn": "Mask R-CNN",
    "object_detection": "SSD",
    "transformer": "Transformer",
}


@pytest.fixture()
def published() -> set[tuple[str, ...]]:
    """(round, model, slice, global batch, minutes) of every published time to train; a row
    such as `| v0.6 | Mask R-CNN | v3-256 / 128 / 32 | 128 | | 35.60 / 57.46 / 107.03 |` is
    three of them."""
    if PUBLISHED is None:
        pytest.skip(f"{REFERENCE} is not beside this checkout")
    rows = set()
    for line in PUBLISHED.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 6 or not cells[0].startswith("v0."):
            continue
        slices, minutes = cells[2].split(" / "), cells[5].split(" / ")
        slices = [s if s.startswith("v3-") else f"v3-{s}" for s in slices]
        rows |= {(cells[0], cells[1], s, cells[3], m) for s, m in zip(slices, minutes, strict=True)}
    return rows


def _row(header: dict[str, str]) -> tuple[str, ...]:
    model = MODELS[header["family"]]
    return header["round"], model, header["slice"], header["global_batch"], header["minutes"]


def test_there_is_a_recipe_per_published_row_of_each_reproduced_model(published):
    # a row without its global batch (v0.5's SSD on v3-32) names no recipe to reproduce
    wanted = {row for row in published if row[1] in MODELS.values() and row[3].isdigit()}
    assert {_row(reproduce.read_header(path)) for path in RECIPES} == wanted
    assert len(RECIPES) == 25  # 9 ResNet-50, 3 Mask R-CNN, 7 SSD, 6 Transformer


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.stem)
def test_recipe_matches_its_header(path: Path):
    header = reproduce.read_header(path)
    reproduce.resolve(path, header)
    assert reproduce.check_matches(path, header) == []


@pytest.mark.parametrize("path", RECIPES, ids=lambda p: p.stem)
def test_header_matches_reference_row(path: Path, published):
    assert _row(reproduce.read_header(path)) in published


def test_a_target_the_recipe_does_not_also_reach_is_reported(tmp_path):
    path = REPO / "official" / "mask_rcnn_v06_v3-32.gin"
    bad = tmp_path / "bad.gin"
    bad.write_text(path.read_text() + 'train.also_reach = {"mask_AP": 0.3}\n')
    header = reproduce.read_header(bad)
    reproduce.resolve(bad, header)
    problems = reproduce.check_matches(bad, header)
    assert problems == ["train.also_reach {'mask_AP': 0.3} != published {'mask_AP': 0.339}"]


@pytest.mark.parametrize(
    "path", [p for p in RECIPES if p.stem.startswith("transformer_")], ids=lambda p: p.stem
)
def test_transformer_peak_rate_is_its_published_constant(path: Path):
    # Tensor2Tensor's rate: constant x min(1, step/warmup) x rsqrt(max(step, warmup)) x d^-0.5,
    # which peaks at constant x warmup^-0.5 x 1024^-0.5 (Transformer big).
    header = reproduce.read_header(path)
    reproduce.resolve(path, header)
    constant = float(re.search(r"lr ([\d.]+)", header["optimizer"]).group(1))
    warmup = int(re.search(r"(\d+) warmup steps", header["optimizer"]).group(1))
    assert gin.query_parameter("learning_rate.warmup_steps") == warmup
    peak = constant * warmup**-0.5 * 1024**-0.5
    assert gin.query_parameter("learning_rate.base_lr") == pytest.approx(peak, rel=1e-3)


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
