"""Benchmark records -> report: MLPerf timing, aborted runs kept, table and plots."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from mlperf_logging.compliance_checker import mlp_parser
from zoo_testing import PYTHON, REPO

from benchmarks.records import INDEX, load_runs, mllog_timing, read_mllog
from benchmarks.report import build_report, markdown_table


def _event(time_ms, key, value=None, metadata=None, kind="POINT_IN_TIME"):
    body = {"namespace": "", "time_ms": time_ms, "event_type": kind, "key": key, "value": value}
    body["metadata"] = metadata or {}
    return ":::MLLOG " + json.dumps(body)


def _write_run(out: Path, slice_name: str, repeat: int, replicas: int, tta_s: float | None):
    """A run as the harness leaves it: index entry, JSON record, MLPerf log."""
    model_dir = out / "resnet" / "default" / slice_name / f"run-{repeat}"
    (model_dir / "records").mkdir(parents=True)
    status = "success" if tta_s is not None else "aborted"
    stop_ms = 1000 + int((tta_s if tta_s is not None else 5.0) * 1000)
    lines = [
        _event(0, "init_start", kind="INTERVAL_START"),
        _event(900, "init_stop", kind="INTERVAL_END"),
        _event(1000, "run_start", kind="INTERVAL_START"),
        _event(stop_ms - 500, "eval_accuracy", 0.5, {"epoch_num": 1.0}),
        _event(stop_ms, "eval_accuracy", 0.98 if tta_s else 0.6, {"epoch_num": 2.0}),
        _event(stop_ms, "run_stop", None, {"status": status}, kind="INTERVAL_END"),
    ]
    (model_dir / "records" / "1.mlperf.log").write_text("\n".join(lines) + "\n")
    record = {"replicas": replicas, "global_batch_size": 32 * replicas, "epochs": 2.0}
    record.update(examples_per_second=100.0 * replicas, target_metric="top_1_accuracy")
    record["target_value"] = 0.97
    (model_dir / "records" / "1.json").write_text(json.dumps(record))
    entry = {"model": "resnet", "recipe": "default", "slice": slice_name, "repeat": repeat}
    entry.update(model_dir=str(model_dir), exit_code=0)
    with open(out / INDEX, "a") as handle:
        handle.write(json.dumps(entry) + "\n")
    return model_dir / "records" / "1.mlperf.log"


@pytest.fixture()
def fixture_runs(tmp_path):
    for repeat, tta in enumerate([10.0, 12.0, 14.0]):
        _write_run(tmp_path, "cpu-1", repeat, 1, tta)
    for repeat, tta in enumerate([6.0, None, 8.0]):  # one aborted repeat
        _write_run(tmp_path, "cpu-2", repeat, 2, tta)
    return tmp_path


def test_mllog_timing_is_run_start_to_run_stop(fixture_runs):
    log = next((fixture_runs / "resnet/default/cpu-1/run-0/records").glob("*.mlperf.log"))
    seconds, status, curve = mllog_timing(read_mllog(log))
    assert (seconds, status) == (10.0, "success")
    assert curve == [(9.5, 0.5), (10.0, 0.98)]


def test_aborted_run_is_kept_as_aborted(fixture_runs):
    runs = load_runs(fixture_runs)
    assert len(runs) == 6
    aborted = [r for r in runs if r.status == "aborted"]
    assert len(aborted) == 1 and aborted[0].slice == "cpu-2"
    assert aborted[0].time_to_accuracy_s is None and aborted[0].error


def test_missing_record_counts_as_aborted(tmp_path):
    entry = {"model": "resnet", "recipe": "default", "slice": "cpu-1", "repeat": 0}
    entry.update(model_dir=str(tmp_path / "never-written"), exit_code=1, error="error: boom")
    (tmp_path / INDEX).write_text(json.dumps(entry) + "\n")
    (run,) = load_runs(tmp_path)
    assert run.status == "aborted" and run.error == "error: boom"


def test_report_table_medians_speedup_and_efficiency(fixture_runs):
    report = build_report(str(fixture_runs))
    cpu1, cpu2 = report["tables"]["resnet/default"]
    assert (cpu1["tta_median_s"], cpu1["tta_min_s"], cpu1["tta_max_s"]) == (12.0, 10.0, 14.0)
    assert (cpu2["succeeded"], cpu2["runs"], cpu2["tta_median_s"]) == (2, 3, 7.0)
    assert cpu2["speedup"] == pytest.approx(12.0 / 7.0)
    assert cpu2["scaling_efficiency"] == pytest.approx(12.0 / 7.0 / 2)
    table = markdown_table("resnet/default", report["tables"]["resnet/default"])
    assert "| cpu-2 | 2 | 64 | 2/3 | 7.0 (6.0-8.0) |" in table
    assert "cpu-2 aborted: target not reached" in table
    for plot in report["plots"]:
        assert Path(plot).stat().st_size > 10_000


def test_report_json_is_one_object(fixture_runs):
    out = subprocess.run(
        [PYTHON, "-m", "benchmarks.report", str(fixture_runs), "--json"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
    ).stdout
    assert json.loads(out)["tables"]["resnet/default"][0]["slice"] == "cpu-1"


def test_report_on_empty_dir_is_one_line_exit_2(tmp_path):
    result = subprocess.run(
        [PYTHON, "-m", "benchmarks.report", str(tmp_path)], capture_output=True, text=True, cwd=REPO
    )
    assert result.returncode == 2 and result.stderr.count("\n") == 1


def test_our_mllog_passes_mlperf_parser(tmp_path):
    from models.core.records import RunInfo, RunRecorder

    info = RunInfo("resnet", "default", "cpu-1", 1, 32, "float32", 0, "top_1_accuracy", 0.9)
    recorder = RunRecorder(str(tmp_path), info)
    recorder.run_start("1 x CPU", 100, 10)
    recorder.eval_result(1.0, {"top_1_accuracy": 0.95})
    recorder.run_stop(success=True)
    lines, errors = mlp_parser.parse_file(recorder.log_path, ruleset="6.1.0")
    assert errors == [] and [x.key for x in lines][-1] == "run_stop"
