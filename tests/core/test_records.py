"""Run records: MLPerf-format events and the JSON record, for finished and aborted runs."""

import dataclasses
import json
import time
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


def _record(recorder) -> dict:
    return json.loads(Path(recorder.json_path).read_text())


def _segment(first, last, seconds, status="aborted", reached=False, record="x") -> dict:
    """A segment as an earlier run record lists it (its own is the last)."""
    segment = {"record": record, "first_step": first, "last_step": last, "run_start": 1.0}
    segment.update(run_stop=None if status == "running" else 2.0, seconds=seconds)
    return {**segment, "status": status, "reached_target": reached}


def _earlier(tmp_path, name: str, *segments: dict, **fields) -> None:
    """An earlier run record in tmp_path/records."""
    (tmp_path / "records").mkdir(exist_ok=True)
    record = {"status": segments[-1]["status"], "segments": list(segments), **fields}
    (tmp_path / "records" / f"{name}.json").write_text(json.dumps(record))


def _resume(tmp_path, first_step: int, accuracy: float = 0.95) -> dict:
    """A run resumed at first_step: one block and evaluation, stopped as Experiment stops it."""
    recorder = RunRecorder(str(tmp_path), INFO, PLAN, "2 x CPU")
    recorder.run_start(train_samples=640, eval_samples=100, first_step=first_step)
    recorder.block_start(first_step, first_step + 10)
    recorder.block_stop()
    recorder.eval_start(first_step + 10)
    recorder.eval_result(first_step + 10, {"top_1_accuracy": accuracy})
    reached = accuracy >= INFO.target_value
    recorder.run_stop(success=reached, reached_target=reached)
    return _record(recorder)


def test_fresh_run_is_one_segment_and_not_resumed(tmp_path):
    recorder = RunRecorder(str(tmp_path), INFO, PLAN, "2 x CPU")
    recorder.run_start(train_samples=640, eval_samples=100)
    _train(recorder, [0.5, 0.95])
    recorder.run_stop(success=True, reached_target=True)
    record = _record(recorder)
    assert record["resumed"] is False and record["resumed_from_step"] is None
    (segment,) = record["segments"]
    assert (segment["first_step"], segment["last_step"], segment["status"]) == (0, 20, "success")
    assert segment["reached_target"] is True and segment["run_stop"] >= segment["run_start"]
    assert record["time_to_accuracy_s"] == segment["seconds"]


def test_resumed_run_sums_its_segments_from_the_first_run_start(tmp_path):
    # An older attempt (its own chain from step 0), then 0-30 preempted, then 30-40 killed
    # (no run_stop; checkpoint at 50 after its last record write), and a stray record from
    # step 90 (checkpoints since deleted): the run resumed at 50 continues the middle two.
    _earlier(tmp_path, "20260101T000000-1", _segment(0, 80, 100.0, "success", True))
    _earlier(tmp_path, "20260102T000000-2", _segment(0, 30, 5.0, record="a"))
    _earlier(tmp_path, "20260102T000100-3", _segment(0, 30, 5.0), _segment(30, 40, 3.0, "running"))
    _earlier(tmp_path, "20260102T000200-4", _segment(90, 95, 9.0))
    record = _resume(tmp_path, first_step=50)
    assert record["resumed"] is True and record["resumed_from_step"] == 50
    steps = [(s["first_step"], s["last_step"], s["status"]) for s in record["segments"]]
    assert steps == [(0, 30, "aborted"), (30, 50, "running"), (50, 60, "success")]
    current = record["segments"][-1]["seconds"]
    assert record["time_to_accuracy_s"] == round(5.0 + 3.0 + current, 3)
    assert record["status"] == "success"


def test_rerun_of_a_run_that_reached_its_target_keeps_its_time(tmp_path):
    _earlier(tmp_path, "20260102T000000-1", _segment(0, 20, 7.0, "success", reached=True))
    record = _resume(tmp_path, first_step=20)
    assert record["resumed"] is True and len(record["segments"]) == 2
    assert record["time_to_accuracy_s"] == 7.0  # the target was first reached in 7 s


def test_resumed_run_that_misses_its_target_has_no_time_to_accuracy(tmp_path):
    _earlier(tmp_path, "20260102T000000-1", _segment(0, 20, 7.0, "success", reached=True))
    record = _resume(tmp_path, first_step=20, accuracy=0.5)
    assert record["status"] == "aborted" and record["time_to_accuracy_s"] is None
    assert record["resumed"] is True


def test_success_without_reaching_the_target_has_no_time_to_accuracy(tmp_path):
    recorder = RunRecorder(str(tmp_path), INFO, PLAN, "2 x CPU")  # INFO has a target
    recorder.run_start(train_samples=640, eval_samples=100)
    recorder.run_stop(success=True, reached_target=False)  # --mode=train: no evaluation
    assert _record(recorder)["time_to_accuracy_s"] is None
    recorder = RunRecorder(str(tmp_path / "b"), INFO, PLAN, "2 x CPU")
    recorder.run_start(train_samples=640, eval_samples=100)
    recorder.run_stop(success=False, reached_target=True)
    assert _record(recorder)["time_to_accuracy_s"] is None


def test_records_from_before_segments_and_unreadable_ones(tmp_path):
    (tmp_path / "records").mkdir()
    legacy = {"status": "aborted", "steps": 30, "time_to_accuracy_s": None}
    legacy["eval_curve"] = [{"step": 30, "seconds": 4.5}]
    (tmp_path / "records" / "20260101T000000-1.json").write_text(json.dumps(legacy))
    (tmp_path / "records" / "20260101T000100-2.json").write_text('{"status": "runn')
    record = _resume(tmp_path, first_step=30)
    steps = [(s["first_step"], s["last_step"], s["seconds"]) for s in record["segments"][:1]]
    assert steps == [(0, 30, 4.5)] and len(record["segments"]) == 2
    assert record["time_to_accuracy_s"] >= 4.5


def test_killed_segment_is_read_up_to_its_last_write_and_logs_stay_per_segment(tmp_path):
    first = RunRecorder(str(tmp_path), INFO, PLAN, "2 x CPU")
    first.run_start(train_samples=640, eval_samples=100)
    first.block_start(0, 10)
    first.block_stop()  # then SIGKILL: no evaluation, no run_stop
    (killed,) = _record(first)["segments"]
    assert (killed["last_step"], killed["status"], killed["run_stop"]) == (10, "running", None)
    time.sleep(1.01)  # records are named by the second they start
    second = RunRecorder(str(tmp_path), INFO, PLAN, "2 x CPU")
    second.run_start(train_samples=640, eval_samples=100, first_step=10)
    second.run_stop(success=False)
    record = _record(second)
    assert [(s["first_step"], s["last_step"]) for s in record["segments"]] == [(0, 10), (10, 10)]
    assert record["segments"][0]["record"] == Path(first.json_path).stem
    keys = [e["key"] for e in _events(second)]
    assert keys.count("run_start") == 1 and "block_start" not in keys
