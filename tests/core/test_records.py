"""Run records: MLPerf-format events and the JSON record, for finished and aborted runs."""

import dataclasses
import json
from pathlib import Path

from models.core.records import RunInfo, RunRecorder

INFO = RunInfo(
    model="resnet18",
    family="resnet",
    recipe="default",
    slice="cpu-2",
    replicas=2,
    global_batch_size=64,
    precision="float32",
    seed=0,
    target_metric="top_1_accuracy",
    target_value=0.9,
)


def _events(recorder) -> list[dict]:
    lines = Path(recorder.log_path).read_text().splitlines()
    return [json.loads(line.split(":::MLLOG ", 1)[1]) for line in lines]


def test_successful_run_records_time_to_accuracy(tmp_path):
    recorder = RunRecorder(str(tmp_path), INFO)
    recorder.run_start("2 x CPU", train_samples=1000, eval_samples=100)
    recorder.eval_result(10, 1.0, {"top_1_accuracy": 0.5}, epoch_num=1.0)
    recorder.eval_result(20, 2.0, {"top_1_accuracy": 0.95}, epoch_num=2.0)
    recorder.run_stop(success=True, reached_target=True)
    events = _events(recorder)
    keys = [e["key"] for e in events]
    assert keys.index("init_start") < keys.index("run_start") < keys.index("run_stop")
    accuracy = [e for e in events if e["key"] == "eval_accuracy"]
    assert [(e["value"], e["metadata"]["epoch_num"]) for e in accuracy] == [(0.5, 1.0), (0.95, 2.0)]
    assert events[-1]["metadata"]["status"] == "success"
    record = json.loads(Path(recorder.json_path).read_text())
    assert record["status"] == "success" and record["time_to_accuracy_s"] >= 0
    assert record["epochs"] == 2.0 and len(record["eval_curve"]) == 2
    assert record["slice"] == "cpu-2" and record["accelerator"] == "2 x CPU"


def test_aborted_run_has_no_time_to_accuracy(tmp_path):
    recorder = RunRecorder(str(tmp_path), INFO)
    recorder.run_start("2 x CPU", train_samples=1000, eval_samples=100)
    recorder.run_stop(success=False)
    assert _events(recorder)[-1]["metadata"]["status"] == "aborted"
    record = json.loads(Path(recorder.json_path).read_text())
    assert record["status"] == "aborted" and record["time_to_accuracy_s"] is None


def test_non_chief_writes_nothing(tmp_path):
    recorder = RunRecorder(str(tmp_path / "worker"), INFO, chief=False)
    recorder.run_start("2 x CPU", train_samples=1000, eval_samples=100)
    recorder.run_stop(success=True)
    assert not (tmp_path / "worker").exists()


def test_finished_run_without_a_target_has_no_time_to_accuracy(tmp_path):
    info = dataclasses.replace(INFO, target_metric=None, target_value=None)
    recorder = RunRecorder(str(tmp_path), info)
    recorder.run_start("1 x CPU", train_samples=1000, eval_samples=100)
    recorder.run_stop(success=True)
    record = json.loads(Path(recorder.json_path).read_text())
    assert record["status"] == "success" and record["time_to_accuracy_s"] is None
