"""Run records: MLPerf-format events and the JSON record, for finished and aborted runs."""

import dataclasses
import json
from pathlib import Path

import gin
from zoo_testing import plan, run_info

from models.core.records import RunRecorder

INFO = run_info(target_value=0.9)
PLAN = plan(steps_per_epoch=10, total_steps=20, global_batch_size=64)


def _events(recorder) -> list[dict]:
    lines = Path(recorder.log_path).read_text().splitlines()
    return [json.loads(line.split(":::MLLOG ", 1)[1]) for line in lines]


def _train(recorder, accuracies: list[float], steps_per_eval: int = 10) -> None:
    """Blocks and evaluation rounds as Experiment._train_loop records them."""
    for index, accuracy in enumerate(accuracies):
        step = index * steps_per_eval
        recorder.block_start(step, step + steps_per_eval)
        recorder.block_stop()
        recorder.eval_start(step + steps_per_eval)
        recorder.eval_result(step + steps_per_eval, {"top_1_accuracy": accuracy})


def test_successful_run_records_time_to_accuracy(tmp_path):
    recorder = RunRecorder(str(tmp_path), INFO, PLAN, "2 x CPU")
    recorder.run_start(train_samples=640, eval_samples=100)
    _train(recorder, [0.5, 0.95])
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


def test_events_come_in_mlperf_order(tmp_path):
    recorder = RunRecorder(str(tmp_path), INFO, PLAN, "2 x CPU")
    recorder.run_start(train_samples=640, eval_samples=100)
    _train(recorder, [0.95])
    recorder.run_stop(success=True, reached_target=True)
    events = {e["key"]: e for e in _events(recorder)}
    assert list(events) == [
        "cache_clear",
        "init_start",
        "submission_benchmark",
        "submission_org",
        "submission_division",
        "submission_status",
        "submission_platform",
        "global_batch_size",
        "seed",
        "gradient_accumulation_steps",
        "train_samples",
        "eval_samples",
        "init_stop",
        "run_start",
        "block_start",
        "block_stop",
        "eval_start",
        "eval_accuracy",
        "eval_stop",
        "run_stop",
    ]
    assert events["cache_clear"]["value"] is False  # this program does not clear OS caches
    assert events["submission_benchmark"]["value"] == "resnet"  # MLPerf's name; the family
    assert events["submission_platform"]["value"] == "2 x CPU"
    block = events["block_start"]["metadata"]
    assert (block["first_epoch_num"], block["epoch_count"]) == (0.0, 1.0)
    assert events["eval_stop"]["metadata"]["epoch_num"] == 1.0


def test_unknown_dataset_size_logs_samples(tmp_path):
    """Without an epoch length, epoch_num counts samples (as MLPerf's BERT) and the sizes
    are logged as null."""
    unsized = plan(steps_per_epoch=None, total_steps=20, global_batch_size=64)
    recorder = RunRecorder(str(tmp_path), INFO, unsized, "2 x CPU")
    recorder.run_start(train_samples=None, eval_samples=None)
    _train(recorder, [0.5, 0.95])
    recorder.run_stop(success=True, reached_target=True)
    events = _events(recorder)
    blocks = [e["metadata"] for e in events if e["key"] == "block_start"]
    assert [(b["first_epoch_num"], b["epoch_count"]) for b in blocks] == [(0, 640), (640, 640)]
    accuracy = [e["metadata"]["epoch_num"] for e in events if e["key"] == "eval_accuracy"]
    assert accuracy == [640, 1280]
    sizes = {e["key"]: e["value"] for e in events if e["key"].endswith("_samples")}
    assert sizes == {"train_samples": None, "eval_samples": None}
    assert json.loads(Path(recorder.json_path).read_text())["epochs"] is None


def test_submission_keys_come_from_gin(tmp_path):
    gin.parse_config(
        [
            "mlperf.submission_org = 'Example Org'",
            "mlperf.submission_platform = 'v3-32'",
            "mlperf.submission_division = 'closed'",
            "mlperf.submission_status = 'onprem'",
            "mlperf.caches_cleared = True",
        ]
    )
    recorder = RunRecorder(str(tmp_path), INFO, PLAN, "2 x CPU")
    values = {e["key"]: e["value"] for e in _events(recorder)}
    assert values["submission_org"] == "Example Org"
    assert values["submission_platform"] == "v3-32"
    assert values["submission_division"] == "closed"
    assert values["submission_status"] == "onprem"
    assert values["cache_clear"] is True


def test_aborted_run_has_no_time_to_accuracy(tmp_path):
    recorder = RunRecorder(str(tmp_path), INFO, PLAN, "2 x CPU")
    recorder.run_start(train_samples=640, eval_samples=100)
    recorder.run_stop(success=False)
    assert _events(recorder)[-1]["metadata"]["status"] == "aborted"
    record = json.loads(Path(recorder.json_path).read_text())
    assert record["status"] == "aborted" and record["time_to_accuracy_s"] is None


def test_non_chief_writes_nothing(tmp_path):
    recorder = RunRecorder(str(tmp_path / "worker"), INFO, PLAN, "2 x CPU", chief=False)
    recorder.run_start(train_samples=640, eval_samples=100)
    _train(recorder, [0.95])
    recorder.run_stop(success=True)
    assert not (tmp_path / "worker").exists()


def test_finished_run_without_a_target_has_no_time_to_accuracy(tmp_path):
    info = dataclasses.replace(INFO, target_metric=None, target_value=None)
    recorder = RunRecorder(str(tmp_path), info, PLAN, "1 x CPU")
    recorder.run_start(train_samples=640, eval_samples=100)
    recorder.run_stop(success=True)
    record = json.loads(Path(recorder.json_path).read_text())
    assert record["status"] == "success" and record["time_to_accuracy_s"] is None
