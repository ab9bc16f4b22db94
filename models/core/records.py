"""Run records: an MLPerf-format log (mlperf_logging.mllog) and one JSON record per run."""

from __future__ import annotations

import json
import logging
import os
import platform
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import tensorflow as tf
from mlperf_logging.mllog import constants
from mlperf_logging.mllog.mllog import MLLogger

from models.core import mlperf
from models.core.files import write_atomically
from models.core.settings import StepPlan

RECORDS_DIR = "records"


@dataclass
class RunInfo:
    """What identifies a run in its record: `model` is the variant trained (`resnet50`)."""

    model: str
    family: str
    recipe: str
    slice: str
    replicas: int
    global_batch_size: int
    precision: str
    seed: int
    target_metric: str | None
    target_value: float | None
    target_direction: str | None = None  # "higher" or "lower": which way the metric improves
    also_reach: dict | None = None  # further targets the run needed to stop (train.also_reach)


@dataclass
class RunRecord(RunInfo):
    """The JSON record of one run (fields as in DESIGN.md)."""

    status: str = "running"
    time_to_accuracy_s: float | None = None  # only when the run reached its target
    resumed: bool = False  # started from a checkpoint, not step 0
    resumed_from_step: int | None = None
    segments: list = field(default_factory=list)  # run_start..run_stop spans, oldest first
    epochs: float | None = 0.0  # None when the dataset's size is unknown
    steps: int = 0
    final_metrics: dict = field(default_factory=dict)
    train_logs: dict = field(default_factory=dict)
    eval_curve: list = field(default_factory=list)
    examples_per_second: float | None = None
    host: str = ""
    accelerator: str = ""
    git_revision: str = ""
    started_at: str = ""


def git_revision() -> str:
    """The project's git commit, or '' outside a checkout."""
    try:
        root = Path(__file__).resolve().parents[2]
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5
        )
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def describe_accelerator(strategy: tf.distribute.Strategy) -> str:
    """E.g. '1 x CPU (AMD EPYC, 2 cores)' or '1 x GPU (NVIDIA H200)'."""
    devices = strategy.extended.worker_devices
    kinds = sorted({tf.DeviceSpec.from_string(d).device_type or "CPU" for d in devices})
    if kinds == ["GPU"]:
        gpu = tf.config.list_physical_devices("GPU")[0]
        details = tf.config.experimental.get_device_details(gpu)
        name = details.get("device_name", "GPU")
    elif kinds == ["CPU"]:
        name = f"{_cpu_name()}, {os.cpu_count()} cores"
    else:
        name = "/".join(kinds)
    return f"{len(devices)} x {'/'.join(kinds)} ({name})"


def _cpu_name() -> str:
    """The host CPU's model name from /proc/cpuinfo, else platform.processor()."""
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "CPU"


def time_to_target(segments: list[dict]) -> float:
    """Seconds of the segments up to the first that reached the target (downtime excluded)."""
    total = 0.0
    for segment in segments:
        total += segment["seconds"]
        if segment["reached_target"]:
            break
    return total


def chain_segments(segments: list[dict], first_step: int) -> list[dict]:
    """The earlier segments a run resumed at `first_step` continues, oldest first: back to the
    newest one that started at step 0, skipping any that started past the step the next one
    resumed from; each ran at least to the step its successor resumed from."""
    kept, bound = [], first_step
    for segment in reversed(segments):
        if segment["first_step"] > bound:
            continue
        kept.append({**segment, "last_step": max(segment["last_step"], bound)})
        bound = segment["first_step"]
        if bound == 0:
            break
    return kept[::-1]


def record_segment(path: str, record: dict) -> dict:
    """The segment a JSON record describes: its own (the last of its `segments`), or for a
    record written before segments were recorded, one from step 0 to its last evaluation."""
    if record.get("segments"):
        return _checked_segment(record["segments"][-1])
    curve = record.get("eval_curve") or [{}]
    seconds = record.get("time_to_accuracy_s") or curve[-1].get("seconds", 0.0)
    segment = _new_segment(Path(path).stem, 0, None)
    segment.update(last_step=record.get("steps", 0), seconds=seconds, status=record.get("status"))
    segment["reached_target"] = record.get("time_to_accuracy_s") is not None
    return _checked_segment(segment)


def _checked_segment(segment: dict) -> dict:
    """`segment` if it has the steps, seconds and outcome time_to_target needs, else ValueError."""
    numbers = [segment.get(key) for key in ("first_step", "last_step", "seconds")]
    valid = all(isinstance(x, int | float) for x in numbers)
    if not valid or not isinstance(segment.get("reached_target"), bool):
        raise ValueError(f"not a run segment: {segment!r:.200}")
    return segment


def read_segments(directory: str, exclude: str) -> list[dict]:
    """The segments of every readable JSON record in `directory` but `exclude`, oldest first."""
    segments = []
    for path, record in _read_records(directory, exclude):
        try:
            segments.append(record_segment(path, record))
        except (ValueError, TypeError, KeyError, AttributeError) as error:
            logging.warning("run record %s skipped: %s", path, error)
    return segments


def evaluated_steps(directory: str, exclude: str) -> set[int]:
    """The steps at which the readable JSON records in `directory` but `exclude` evaluated."""
    steps = set()
    for _, record in _read_records(directory, exclude):
        curve = record.get("eval_curve") if isinstance(record, dict) else None
        steps.update(p["step"] for p in curve or [] if isinstance(p, dict) and "step" in p)
    return steps


def _read_records(directory: str, exclude: str):
    """(path, parsed JSON) of each readable record in `directory` but `exclude`, oldest first."""
    for path in sorted(tf.io.gfile.glob(f"{directory}/*.json")):
        if path == exclude:
            continue
        try:
            yield path, json.loads(tf.io.gfile.GFile(path).read())
        except (tf.errors.OpError, ValueError) as error:
            logging.warning("run record %s skipped: %s", path, error)


def trained_by(model_dir: str) -> str | None:
    """'<model> (<family>)' of the newest readable run record in model_dir, or None."""
    for path in sorted(tf.io.gfile.glob(f"{model_dir.rstrip('/')}/{RECORDS_DIR}/*.json"))[::-1]:
        try:
            record = json.loads(tf.io.gfile.GFile(path).read())
            return f"{record['model']} ({record['family']})"
        except (tf.errors.OpError, ValueError, TypeError, KeyError):
            continue
    return None


def _new_segment(record: str, first_step: int, run_start: float | None) -> dict:
    """A segment that has not stopped: its record's name, steps and run_start (unix seconds)."""
    return {
        "record": record,
        "first_step": first_step,
        "last_step": first_step,
        "run_start": run_start,
        "run_stop": None,  # stays null for a segment killed without a run_stop
        "seconds": 0.0,
        "status": "running",
        "reached_target": False,
    }


class _RewritingHandler(logging.Handler):
    """Keeps the log's lines and rewrites the file on each event (works on gs://, no append)."""

    def __init__(self, path: str):
        super().__init__()
        self.path, self.lines = path, []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))
        write_atomically(self.path, "\n".join(self.lines) + "\n")


def _file_logger(path: str) -> logging.Logger:
    logger = logging.getLogger(f"mllog.{path}")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    logger.addHandler(_RewritingHandler(path))
    return logger


class RunRecorder:
    """Writes the MLPerf log as events happen and the JSON record at run_start, after every
    training block and evaluation, and at the end.

    The log passes MLPerf's compliance checker (training_1.0.0/common.yaml; see README.md):
    submission keys from gin `mlperf.*`, a block per training segment between evaluations,
    an eval_start/eval_accuracy/eval_stop per evaluation round. A run resumed from a
    checkpoint logs its own segment; its JSON record lists the earlier segments too."""

    def __init__(
        self,
        model_dir: str,
        info: RunInfo,
        plan: StepPlan,
        accelerator: str,
        models: dict | None = None,
        chief: bool = True,
    ):
        """models: the run's models, for the hyper-parameter keys `mlperf.hyperparameters`
        names (read before anything is written, so bad `mlperf.*` settings write nothing)."""
        submission = mlperf.Submission()
        self.benchmark, _ = mlperf.benchmark(info.family, info.model)
        keys = submission.keys(self.benchmark, accelerator)
        keys[constants.GLOBAL_BATCH_SIZE] = info.global_batch_size
        keys[constants.SEED] = info.seed
        keys[constants.GRADIENT_ACCUMULATION_STEPS] = 1  # the trainer never accumulates
        keys.update(mlperf.hyperparameters(plan, models or {}, info.replicas))
        self.chief, self.clock = chief, plan.clock
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f"-{os.getpid()}"
        directory = f"{model_dir.rstrip('/')}/{RECORDS_DIR}"
        self.record = RunRecord(**asdict(info), started_at=stamp, accelerator=accelerator)
        self.record.host = f"{platform.node()} ({_cpu_name()}, "
        self.record.host += f"{os.cpu_count()} CPUs)"
        self.record.git_revision = git_revision()
        self.directory, self.json_path = directory, f"{directory}/{stamp}.json"
        self.log_path = f"{directory}/{stamp}.mlperf.log"
        self._run_start: float | None = None
        self._block_first_epoch: float | None = None
        self._block_stop_step = 0
        self._segment = _new_segment(stamp, 0, None)
        if chief:
            tf.io.gfile.makedirs(directory)
            self.mllogger = MLLogger(logger=_file_logger(self.log_path))
            self._event("event", constants.CACHE_CLEAR, submission.caches_cleared)
            self._event("start", constants.INIT_START)
            for key, value in keys.items():
                self._event("event", key, value)

    def _event(self, kind: str, key: str, value=None, metadata=None) -> None:
        if self.chief:
            getattr(self.mllogger, kind)(key=key, value=value, metadata=metadata)

    def run_start(
        self, train_samples: int | None, eval_samples: int | None, first_step: int = 0
    ) -> None:
        """None for a dataset of unknown size is logged as null (MLPerf's check is != '');
        first_step > 0: resumed from that checkpoint, after the earlier records' segments."""
        self._event("event", constants.TRAIN_SAMPLES, train_samples)
        self._event("event", constants.EVAL_SAMPLES, eval_samples)
        self._event("end", constants.INIT_STOP)
        self._event("start", constants.RUN_START)
        self._run_start = time.time()
        start = round(self._run_start, 3)
        self._segment = _new_segment(self._segment["record"], first_step, start)
        earlier = []
        if first_step and self.chief:
            earlier = chain_segments(read_segments(self.directory, self.json_path), first_step)
        self.record.resumed, self.record.resumed_from_step = first_step > 0, first_step or None
        self.record.segments = [*earlier, self._segment]
        self.write()

    def block_start(self, step: int, stop: int) -> None:
        """A training segment from `step` to `stop`, in MLPerf's epoch_num units."""
        first = mlperf.epoch_num(self.clock, step)
        count = mlperf.epoch_num(self.clock, stop - step)  # the segment's length
        metadata = {constants.FIRST_EPOCH_NUM: first, constants.EPOCH_COUNT: count}
        self._event("start", constants.BLOCK_START, metadata=metadata)
        self._block_first_epoch, self._block_stop_step = first, stop

    def block_stop(self) -> None:
        """The segment trained to the block's last step (a preempted block never stops)."""
        metadata = {constants.FIRST_EPOCH_NUM: self._block_first_epoch}
        self._event("end", constants.BLOCK_STOP, metadata=metadata)
        self._segment["last_step"] = max(self._segment["last_step"], self._block_stop_step)
        self.write()

    def evaluated_before(self, step: int) -> bool:
        """Whether an earlier run in this model_dir recorded an evaluation at `step`."""
        return step in evaluated_steps(self.directory, self.json_path)

    def eval_start(self, step: int) -> None:
        metadata = {constants.EPOCH_NUM: mlperf.epoch_num(self.clock, step)}
        self._event("start", constants.EVAL_START, metadata=metadata)

    def elapsed(self) -> float:
        return time.time() - self._run_start if self._run_start else 0.0

    def train_progress(self, logs: dict[str, float]) -> None:
        """The last training loop's means (losses, learning rates) and examples/s."""
        self.record.examples_per_second = logs.get("examples_per_second")
        self.record.train_logs = {k: v for k, v in logs.items() if k != "examples_per_second"}

    def eval_result(self, step: int, metrics: dict[str, float], outputs: list[str] = ()) -> None:
        """One evaluation round's metrics: eval_accuracy (the target metric's value only),
        eval_stop, and a point of the JSON record's eval curve (with `outputs`: the files
        the round wrote and scored, e.g. translations)."""
        epoch_num = {constants.EPOCH_NUM: mlperf.epoch_num(self.clock, step)}
        value = mlperf.eval_accuracy(self.benchmark, self.record.target_metric, metrics)
        if value is not None:
            self._event("event", constants.EVAL_ACCURACY, value, epoch_num)
        self._event("end", constants.EVAL_STOP, metadata=epoch_num)
        epoch = self.clock.epoch(step)
        self.record.epochs, self.record.steps = epoch, step
        self._segment["last_step"] = max(self._segment["last_step"], step)
        self.record.final_metrics.update(metrics)
        point = {"step": step, "epoch": epoch, "seconds": round(self.elapsed(), 3), **metrics}
        point["train"] = dict(self.record.train_logs)
        if outputs:
            point["outputs"] = list(outputs)
        self.record.eval_curve.append(point)
        self.write()

    def run_stop(self, success: bool, reached_target: bool = False) -> None:
        """The run's end: success or aborted; time-to-accuracy only when it reached a target,
        summed over its segments (time_to_target)."""
        status = constants.SUCCESS if success else constants.ABORTED
        self._event("end", constants.RUN_STOP, metadata={constants.STATUS: status})
        self.record.status = status
        self._touch()
        self._segment.update(status=status, reached_target=success and reached_target)
        self._segment["run_stop"] = round(time.time(), 3)
        if success and reached_target:
            self.record.time_to_accuracy_s = round(time_to_target(self.record.segments), 3)
        self.write()

    def _touch(self) -> None:
        """The current segment's seconds so far, until its run_stop."""
        if self._segment["run_stop"] is None:
            self._segment["seconds"] = round(self.elapsed(), 3)

    def write(self) -> None:
        """Rewrites the JSON record (chief only)."""
        if not self.chief:
            return
        self._touch()
        write_atomically(self.json_path, json.dumps(asdict(self.record), indent=2, default=float))
