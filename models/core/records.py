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


@dataclass
class RunRecord(RunInfo):
    """The JSON record of one run (fields as in DESIGN.md)."""

    status: str = "running"
    time_to_accuracy_s: float | None = None  # only when the run reached its target
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
    """Writes the MLPerf log as events happen and the JSON record at every eval and the end.

    The log passes MLPerf's compliance checker (training_1.0.0/common.yaml; see README.md):
    submission keys from gin `mlperf.*`, a block per training segment between evaluations,
    an eval_start/eval_accuracy/eval_stop per evaluation round."""

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
        keys = submission.keys(info.family, accelerator)
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
        self.json_path = f"{directory}/{stamp}.json"
        self.log_path = f"{directory}/{stamp}.mlperf.log"
        self._run_start: float | None = None
        self._block_first_epoch: float | None = None
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

    def run_start(self, train_samples: int | None, eval_samples: int | None) -> None:
        """None for a dataset of unknown size is logged as null (MLPerf's check is != '')."""
        self._event("event", constants.TRAIN_SAMPLES, train_samples)
        self._event("event", constants.EVAL_SAMPLES, eval_samples)
        self._event("end", constants.INIT_STOP)
        self._event("start", constants.RUN_START)
        self._run_start = time.time()

    def block_start(self, step: int, stop: int) -> None:
        """A training segment from `step` to `stop`, in MLPerf's epoch_num units."""
        first = mlperf.epoch_num(self.clock, step)
        count = mlperf.epoch_num(self.clock, stop - step)  # the segment's length
        metadata = {constants.FIRST_EPOCH_NUM: first, constants.EPOCH_COUNT: count}
        self._event("start", constants.BLOCK_START, metadata=metadata)
        self._block_first_epoch = first

    def block_stop(self) -> None:
        metadata = {constants.FIRST_EPOCH_NUM: self._block_first_epoch}
        self._event("end", constants.BLOCK_STOP, metadata=metadata)

    def eval_start(self, step: int) -> None:
        metadata = {constants.EPOCH_NUM: mlperf.epoch_num(self.clock, step)}
        self._event("start", constants.EVAL_START, metadata=metadata)

    def elapsed(self) -> float:
        return time.time() - self._run_start if self._run_start else 0.0

    def train_progress(self, logs: dict[str, float]) -> None:
        """The last training loop's means (losses, learning rates) and examples/s."""
        self.record.examples_per_second = logs.get("examples_per_second")
        self.record.train_logs = {k: v for k, v in logs.items() if k != "examples_per_second"}

    def eval_result(self, step: int, metrics: dict[str, float]) -> None:
        """One evaluation round's metrics: eval_accuracy (the target metric's value only),
        eval_stop, and a point of the JSON record's eval curve."""
        epoch_num = {constants.EPOCH_NUM: mlperf.epoch_num(self.clock, step)}
        value = metrics.get(self.record.target_metric or "", None)
        if value is not None:
            self._event("event", constants.EVAL_ACCURACY, value, epoch_num)
        self._event("end", constants.EVAL_STOP, metadata=epoch_num)
        epoch = self.clock.epoch(step)
        self.record.epochs, self.record.steps = epoch, step
        self.record.final_metrics.update(metrics)
        point = {"step": step, "epoch": epoch, "seconds": round(self.elapsed(), 3), **metrics}
        point["train"] = dict(self.record.train_logs)
        self.record.eval_curve.append(point)
        self.write()

    def run_stop(self, success: bool, reached_target: bool = False) -> None:
        """The run's end: success or aborted; time-to-accuracy only when it reached a target."""
        status = constants.SUCCESS if success else constants.ABORTED
        self._event("end", constants.RUN_STOP, metadata={constants.STATUS: status})
        self.record.status = status
        if success and reached_target:
            self.record.time_to_accuracy_s = round(self.elapsed(), 3)
        self.write()

    def write(self) -> None:
        if not self.chief:
            return
        write_atomically(self.json_path, json.dumps(asdict(self.record), indent=2, default=float))
