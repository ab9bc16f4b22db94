"""Benchmark records -> report: MLPerf timing, aborted runs kept, table and plots."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from zoo_testing import PYTHON, REPO

from benchmarks.records import INDEX, load_runs, mllog_timing, read_mllog
from benchmarks.report import build_report, markdown_table
from models.core.errors import UsageError


def _event(time_ms, key, value=None, metadata=None, kind="POINT_IN_TIME"):
    body = {"namespace": "", "time_ms": time_ms, "event_type": kind, "key": key, "value": value}
    body["metadata"] = metadata or {}
    return ":::MLLOG " + json.dumps(body)


RESNET = {"family": "resnet", "model": "resnet18", "recipe": "default"}
TOP_1 = {"target_metric": "top_1_accuracy", "target_value": 0.97, "target_direction": "higher"}
ASR = {"family": "asr", "model": "asr_small", "recipe": "default"}
WER = {"target_metric": "wer", "target_value": 0.2, "target_direction": "lower"}
NO_TARGET = {"target_metric": None, "target_value": None, "target_direction": None}


def _write_run(
    out: Path,
    slice_name: str,
    repeat: int,
    replicas: int,
    tta_s: float | None,
    run: dict = RESNET,
    target: dict = TOP_1,
    stopped: str | None = None,
    curve: tuple[float, float] = (0.5, 0.98),
    **record_fields,
):
    """A run as the harness leaves it: index entry, JSON record, MLPerf log (two evaluations
    of the target metric, when there is one). `stopped` is the run_stop status (default:
    success when tta_s is given); record_fields go into the JSON record."""
    model_dir = out / run["family"] / run["recipe"] / run["model"] / slice_name / f"run-{repeat}"
    (model_dir / "records").mkdir(parents=True)
    status = stopped or ("success" if tta_s is not None else "aborted")
    stop_ms = 1000 + int((tta_s if tta_s is not None else 5.0) * 1000)
    evals = [
        _event(stop_ms - 500, "eval_accuracy", curve[0], {"epoch_num": 1.0}),
        _event(stop_ms, "eval_accuracy", curve[1], {"epoch_num": 2.0}),
    ]
    if target["target_metric"] is None:
        evals = []  # MLPerf's eval_accuracy is the target metric's value
    lines = [
        _event(0, "init_start", kind="INTERVAL_START"),
        _event(900, "init_stop", kind="INTERVAL_END"),
        _event(1000, "run_start", kind="INTERVAL_START"),
        *evals,
        _event(stop_ms, "run_stop", None, {"status": status}, kind="INTERVAL_END"),
    ]
    (model_dir / "records" / "1.mlperf.log").write_text("\n".join(lines) + "\n")
    record = {**run, **target, "replicas": replicas, "global_batch_size": 32 * replicas}
    record.update(epochs=2.0, steps=20, examples_per_second=100.0 * replicas)
    record["time_to_accuracy_s"] = tta_s
    if target["target_metric"] is not None:
        seconds = (stop_ms - 1500) / 1000.0, (stop_ms - 1000) / 1000.0
        record["eval_curve"] = [
            {"seconds": t, target["target_metric"]: value}
            for t, value in zip(seconds, curve, strict=True)
        ]
    record.update(record_fields)
    (model_dir / "records" / "1.json").write_text(json.dumps(record))
    entry = {**run, "slice": slice_name, "repeat": repeat}
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
    log = next((fixture_runs / "resnet/default/resnet18/cpu-1/run-0/records").glob("*.mlperf.log"))
    assert mllog_timing(read_mllog(log)) == (10.0, "success")
    (run, *_) = load_runs(fixture_runs)
    assert run.curve == [(9.5, 0.5), (10.0, 0.98)]  # the record's, in the target's own scale


def test_aborted_run_is_kept_as_aborted(fixture_runs):
    runs = load_runs(fixture_runs)
    assert len(runs) == 6
    aborted = [r for r in runs if r.status == "aborted"]
    assert len(aborted) == 1 and aborted[0].slice == "cpu-2"
    assert aborted[0].time_to_accuracy_s is None and aborted[0].error


def test_missing_record_counts_as_aborted(tmp_path):
    entry = {**RESNET, "slice": "cpu-1", "repeat": 0}
    entry.update(model_dir=str(tmp_path / "never-written"), exit_code=1, error="error: boom")
    (tmp_path / INDEX).write_text(json.dumps(entry) + "\n")
    (run,) = load_runs(tmp_path)
    assert run.status == "aborted" and run.error == "error: boom"


def test_index_from_before_spine_v2_names_the_family_as_model(tmp_path):
    entry = {"model": "resnet", "recipe": "default", "slice": "cpu-1", "repeat": 0}
    entry.update(model_dir=str(tmp_path / "never-written"), exit_code=1)
    (tmp_path / INDEX).write_text(json.dumps(entry) + "\n")
    (run,) = load_runs(tmp_path)
    assert run.recipe_path == "resnet/default"


def test_report_table_medians_speedup_and_efficiency(fixture_runs):
    report = build_report(str(fixture_runs))
    (table,) = report["tables"]
    assert table["recipe"] == "resnet/default" and table["model"] == "resnet18"
    cpu1, cpu2 = table["rows"]
    assert (cpu1["tta_median_s"], cpu1["tta_min_s"], cpu1["tta_max_s"]) == (12.0, 10.0, 14.0)
    assert (cpu2["succeeded"], cpu2["runs"], cpu2["tta_median_s"]) == (2, 3, 7.0)
    assert cpu2["speedup"] == pytest.approx(12.0 / 7.0)
    assert cpu2["scaling_efficiency"] == pytest.approx(12.0 / 7.0 / 2)
    text = markdown_table(table)
    assert "### resnet/default (resnet18)" in text and "target: top_1_accuracy >= 0.97" in text
    assert "| cpu-2 | 2 | 64 | 2/3 | 7.0 (6.0-8.0) |" in text
    assert "cpu-2 aborted: target not reached" in text
    for plot in report["plots"]:
        assert Path(plot).stat().st_size > 10_000
    assert Path(report["plots"][0]).name == "resnet-default-resnet18-tta.png"


def test_lower_is_better_target_reads_with_its_comparison(tmp_path):
    for repeat, tta in enumerate([20.0, 30.0]):
        _write_run(tmp_path, "cpu-1", repeat, 1, tta, run=ASR, target=WER, curve=(0.5, 0.15))
    (table,) = build_report(str(tmp_path))["tables"]
    assert table["target"] == "wer <= 0.2" and table["rows"][0]["tta_median_s"] == 25.0
    assert "target: wer <= 0.2" in markdown_table(table)


def test_a_target_with_also_reach_names_both(tmp_path):
    mask_rcnn = {"family": "mask_rcnn", "model": "mask_rcnn_resnet18_fpn", "recipe": "default"}
    both = {"target_metric": "AP", "target_value": 0.45, "target_direction": "higher"}
    both["also_reach"] = {"mask_AP": 0.2}
    _write_run(tmp_path, "cpu-1", 0, 1, 40.0, run=mask_rcnn, target=both, curve=(0.1, 0.5))
    (table,) = build_report(str(tmp_path))["tables"]
    assert table["target"] == "AP >= 0.45, also mask_AP 0.2"


def test_runs_without_a_target_have_no_time_to_accuracy(tmp_path):
    _write_run(tmp_path, "cpu-1", 0, 1, None, target=NO_TARGET, stopped="success")
    _write_run(tmp_path, "cpu-2", 0, 2, None, target=NO_TARGET, stopped="success")
    (run, _) = load_runs(tmp_path)
    assert run.status == "success" and run.time_to_accuracy_s is None and run.target is None
    report = build_report(str(tmp_path))
    (table,) = report["tables"]
    assert table["target"] is None and [r["succeeded"] for r in table["rows"]] == [1, 1]
    assert table["rows"][1]["speedup"] is None
    text = markdown_table(table)
    assert "target: none" in text and "| cpu-1 | 1 | 32 | 1/1 | - | 2 |" in text
    assert all(Path(plot).is_file() for plot in report["plots"])


def test_report_json_is_one_object(fixture_runs):
    out = subprocess.run(
        [PYTHON, "-m", "benchmarks.report", str(fixture_runs), "--json"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
    ).stdout
    assert json.loads(out)["tables"][0]["rows"][0]["slice"] == "cpu-1"


def test_report_on_empty_dir_is_one_line_exit_2(tmp_path):
    result = subprocess.run(
        [PYTHON, "-m", "benchmarks.report", str(tmp_path)], capture_output=True, text=True, cwd=REPO
    )
    assert result.returncode == 2 and result.stderr.count("\n") == 1


def _report(out: Path) -> subprocess.CompletedProcess:
    command = [PYTHON, "-m", "benchmarks.report", str(out)]
    return subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=300)


def test_corrupt_index_line_is_one_line_exit_2(fixture_runs):
    index = fixture_runs / INDEX
    lines = index.read_text().splitlines()
    lines[1] = lines[1][:25] + "}"
    index.write_text("\n".join(lines) + "\n")
    result = _report(fixture_runs)
    assert result.returncode == 2 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: {index} line 2: not a JSON index entry (")


def test_index_line_without_an_entry_is_one_line_exit_2(fixture_runs):
    index = fixture_runs / INDEX
    index.write_text(index.read_text() + '{"model": "resnet18"}\n[1, 2]\n')
    result = _report(fixture_runs)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"error: {index} line 7: index entry without recipe, slice, repeat, model_dir"
    ]


def test_last_index_line_cut_short_is_skipped_with_a_warning(fixture_runs, capsys):
    index = fixture_runs / INDEX
    index.write_text(index.read_text() + '{"family": "resnet", "model": "res')  # no newline
    assert len(load_runs(fixture_runs)) == 6
    assert capsys.readouterr().err.splitlines() == [
        f"warning: {index} line 7 is cut short (a harness killed mid-write?); skipped"
    ]
    index.write_text(index.read_text() + "\n")  # a newline: written whole, so corrupt
    with pytest.raises(UsageError, match=f"{index} line 7: not a JSON index entry"):
        load_runs(fixture_runs)


def test_corrupt_record_or_log_names_the_file(tmp_path):
    log = _write_run(tmp_path, "cpu-1", 0, 1, 10.0)
    record = log.with_name("1.json")
    record.write_text(record.read_text()[:-10])
    with pytest.raises(UsageError, match=f"^{record}: not a JSON run record"):
        load_runs(tmp_path)
    record.write_text("{}")
    log.write_text(log.read_text() + ':::MLLOG {"key": "run_st\n')
    with pytest.raises(UsageError, match=f"^{log} line 7: not an MLPerf event"):
        load_runs(tmp_path)


def test_rerun_into_the_same_out_counts_each_run_once(fixture_runs):
    index = fixture_runs / INDEX
    first = index.read_text().splitlines()[0]
    index.write_text(index.read_text() + first + "\n")
    assert len(load_runs(fixture_runs)) == 6


def _segments(*spans: tuple[int, int, float, str]) -> list[dict]:
    keys = ("first_step", "last_step", "seconds", "status")
    return [dict(zip(keys, span, strict=True), reached_target=False) for span in spans]


def test_resumed_run_is_timed_over_its_segments_and_shown_as_resumed(tmp_path):
    _write_run(tmp_path, "cpu-1", 0, 1, 12.0)
    segments = _segments((0, 10, 4.0, "aborted"), (10, 20, 6.5, "success"))
    # Its MLPerf log times the last segment (6.5 s); its record sums both (10.5 s).
    fields = {"segments": segments, "resumed": True, "resumed_from_step": 10}
    _write_run(tmp_path, "cpu-1", 1, 1, 6.5, time_to_accuracy_s=10.5, **fields)
    resumed = load_runs(tmp_path)[1]
    assert resumed.resumed and resumed.time_to_accuracy_s == 10.5
    assert resumed.curve == [(10.0, 0.5), (10.5, 0.98)]  # seconds since the first run_start
    (table,) = build_report(str(tmp_path))["tables"]
    row = table["rows"][0]
    assert row["tta_median_s"] == 11.25
    assert row["resumed"] == [{"seed": 1, "resumed_from_step": 10, "segments": segments}]
    text = markdown_table(table)
    assert "| cpu-1 | 1 | 32 | 2/2 (1 resumed) | 11.2 (10.5-12.0) |" in text
    assert (
        "cpu-1 seed 1 resumed at step 10, 2 segments (time summed over them): "
        "steps 0-10 in 4.0 s (aborted), 10-20 in 6.5 s (success)"
    ) in text
