"""The analytical slice model: its arithmetic, the one-point fit, the recipes it reads, its CLI."""

import json
import math
import subprocess
import sys
from dataclasses import replace

import pytest
from zoo_testing import REPO

from benchmarks import predict as P
from models.core.errors import UsageError

FIVE = ["v3-8", "v3-32", "v3-128", "v3-512", "v3-2048"]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "benchmarks.predict", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_compute_time_of_one_step():
    # 1024 examples x 3 x 2 x 3.8e9 FLOP on 8 cores of 61.5 TFLOP/s: 47.45 ms at peak.
    expected = 1024 * 3 * 2 * 3.8e9 / (8 * 61.5e12)
    spec = P.MODELS["resnet50"]
    assert spec.train_flops == pytest.approx(2.28e10)
    assert P.compute_seconds(1024, spec.train_flops, 8, 1.0) == pytest.approx(expected)
    assert expected == pytest.approx(0.047454, rel=1e-4)
    assert P.compute_seconds(1024, spec.train_flops, 8, 0.5) == pytest.approx(2 * expected)


def test_ring_allreduce_small_case():
    # 4-chip ring, 1 GB, 1 GB/s links x 2, 1 us per step: 2*3/4 * 1e9/2e9 + 6 * 1e-6 s.
    got = P.ring_allreduce_seconds(1e9, 4, link_bytes_per_s=1e9, links=2, hop_latency_s=1e-6)
    assert got == pytest.approx(0.75 + 6e-6)
    assert P.ring_allreduce_seconds(1e9, 1) == 0.0


def test_torus_allreduce_second_dimension_carries_a_shard():
    b = P.MODELS["resnet50"].gradient_bytes
    assert b == 25_557_032 * 4
    expected = P.ring_allreduce_seconds(b, 4) + P.ring_allreduce_seconds(b / 4, 8)
    assert P.torus_allreduce_seconds(b, (4, 8)) == pytest.approx(expected)
    # Bandwidth term of the 2-D scheme equals one ring over all chips: 2(1 - 1/n) B / (2 x 70 GB/s).
    bandwidth = P.torus_allreduce_seconds(b, (32, 32)) - 2 * (31 + 31) * P.ICI_HOP_LATENCY_S
    assert bandwidth == pytest.approx(2 * (1 - 1 / 1024) * b / (2 * 70e9))


def test_torus_shape_and_slice_names():
    assert [P.torus_shape(c) for c in (4, 16, 64, 128, 256, 1024)] == [
        (2, 2),
        (4, 4),
        (8, 8),
        (8, 16),
        (16, 16),
        (32, 32),
    ]
    assert P.slice_cores("v3-2048") == 2048
    for bad in ("v3-6", "v3-4", "v3-4096", "v2-32", "v3-32x", "cpu-4"):
        with pytest.raises(UsageError):
            P.slice_cores(bad)


def test_epochs_at_between_and_beyond_reference_points():
    points = P.RESNET50_CONVERGENCE
    for batch, epochs in points:
        assert P.epochs_to_target(batch, points) == pytest.approx(epochs)
    assert P.epochs_to_target(math.sqrt(4096 * 8192), points) == pytest.approx(41.0)
    assert P.epochs_to_target(16384, points) == pytest.approx(49.0)  # halfway 2^13..2^15
    assert P.epochs_to_target(256, points) == pytest.approx(35.0)  # clamped low
    assert P.epochs_to_target(65536, points) == pytest.approx(56.0)  # clamped high


def test_global_batch_read_from_repo_slice_recipes():
    got = {s: P.read_global_batch(s) for s in FIVE}
    assert got == {"v3-8": 1024, "v3-32": 4096, "v3-128": 16384, "v3-512": 32768, "v3-2048": 32768}


def test_global_batch_regex_and_missing_recipe(tmp_path):
    (tmp_path / "v3-64.gin").write_text(
        "# train.global_batch_size = 1\ntrain.global_batch_size = 8192  # per slice\n"
    )
    assert P.read_global_batch("v3-64", tmp_path) == 8192
    with pytest.raises(UsageError, match="no slice recipe"):
        P.read_global_batch("v3-16", tmp_path)


def test_fit_reproduces_the_fitted_point_only():
    result = P.predict("resnet50", FIVE, fit="v3-32")
    rows = {r["slice"]: r for r in result["rows"]}
    assert result["fitted_on"] == {"slice": "v3-32", "round": "v0.6", "minutes": 42.19}
    assert rows["v3-32"]["fitted"] and rows["v3-32"]["error_pct"] == pytest.approx(0, abs=1e-9)
    assert rows["v3-32"]["predicted_minutes"] == pytest.approx(42.19)
    others = [r for s, r in rows.items() if s != "v3-32"]
    assert all(not r["fitted"] and abs(r["error_pct"]) > 0.1 for r in others)
    assert result["predicted_points"] == 4
    mean = sum(abs(r["error_pct"]) for r in others) / 4
    assert result["mean_abs_error_pct"] == pytest.approx(mean)
    assert 0 < result["efficiency"] < 1


def test_other_fit_point_changes_efficiency():
    on_v3_8 = P.predict("resnet50", FIVE, fit="v3-8")
    rows = {r["slice"]: r for r in on_v3_8["rows"]}
    assert rows["v3-8"]["error_pct"] == pytest.approx(0, abs=1e-9)
    assert rows["v3-8"]["published_round"] == "v0.5"
    assert on_v3_8["efficiency"] != pytest.approx(P.predict("resnet50", FIVE)["efficiency"])


def test_predictions_ignore_unfitted_published_times(monkeypatch):
    spec = P.MODELS["resnet50"]
    changed = tuple(p._replace(minutes=99.0) if p.slice != "v3-32" else p for p in spec.published)
    before = P.predict("resnet50", FIVE)
    monkeypatch.setitem(P.MODELS, "resnet50", replace(spec, published=changed))
    after = P.predict("resnet50", FIVE)
    assert [r["predicted_minutes"] for r in after["rows"]] == pytest.approx(
        [r["predicted_minutes"] for r in before["rows"]]
    )


def test_given_efficiency_fits_nothing():
    result = P.predict("resnet50", ["v3-32"], efficiency=0.5)
    assert result["fitted_on"] is None and result["efficiency"] == 0.5
    assert result["predicted_points"] == 1 and not result["rows"][0]["fitted"]
    with pytest.raises(UsageError):
        P.predict("resnet50", ["v3-32"], efficiency=1.5)
    with pytest.raises(UsageError, match="unknown model"):
        P.predict("resnet5", ["v3-32"])


def test_cli_json_is_one_object():
    done = _cli("--json", "--slices=" + ",".join(FIVE))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1
    result = json.loads(lines[0])
    assert [r["slice"] for r in result["rows"]] == FIVE
    assert result["fitted_on"]["slice"] == "v3-32" and result["assumptions"]


def test_cli_table_lists_assumptions():
    done = _cli("--slices=v3-8,v3-32", "--efficiency=0.3")
    assert done.returncode == 0, done.stderr
    assert "| v3-8 | 4 (2x2) | 1024 |" in done.stdout
    assert "Assumptions:" in done.stdout and "nothing fitted" in done.stdout


@pytest.mark.parametrize(
    "args",
    [["--slices=v3-33"], ["--slices=v3-64"], ["--model=bert"], ["--fit=v3-64"], ["--nope"]],
)
def test_cli_bad_input_is_one_line_exit_2(args):
    done = _cli(*args)
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
