"""Reads what benchmark runs leave behind: the harness index, JSON records and MLPerf logs."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from models.core.target import Target

INDEX = "runs.jsonl"
MLLOG_PREFIX = ":::MLLOG "


@dataclass
class RunResult:
    """One (slice, repeat) run as the report sees it: `model` is the variant trained, `recipe`
    its name under configs/<family>/."""

    family: str
    model: str
    recipe: str
    slice: str
    repeat: int
    status: str  # "success" or "aborted"
    replicas: int | None = None
    global_batch_size: int | None = None
    time_to_accuracy_s: float | None = None  # MLPerf run_start -> run_stop, target reached
    epochs: float | None = None  # None when the dataset's size is unknown
    steps: int | None = None
    examples_per_second: float | None = None
    target_metric: str | None = None
    target_value: float | None = None
    target_direction: str | None = None  # "higher" or "lower": which way the metric improves
    curve: list[tuple[float, float]] = field(default_factory=list)  # (seconds, eval value)
    error: str = ""

    @property
    def recipe_path(self) -> str:
        """`<family>/<recipe>`, as --recipe names it."""
        return f"{self.family}/{self.recipe}"

    @property
    def target(self) -> Target | None:
        """The run's target (its str() reads e.g. 'wer <= 0.2'), None when it had none."""
        if self.target_metric is None or self.target_value is None:
            return None
        lower = self.target_direction == "lower"
        return Target(self.target_metric, self.target_value, lower_is_better=lower)


def read_mllog(path: str | Path) -> list[dict]:
    """The events of an MLPerf-format log, in order."""
    events = []
    for line in Path(path).read_text().splitlines():
        if MLLOG_PREFIX in line:
            events.append(json.loads(line.split(MLLOG_PREFIX, 1)[1]))
    return events


def mllog_timing(events: list[dict]) -> tuple[float | None, str, list[tuple[float, float]]]:
    """(run_start -> run_stop seconds, run_stop status, eval curve) from MLPerf events."""
    start = next((e["time_ms"] for e in events if e["key"] == "run_start"), None)
    stop = next((e for e in events if e["key"] == "run_stop"), None)
    status = stop["metadata"].get("status", "aborted") if stop else "aborted"
    seconds = (stop["time_ms"] - start) / 1000.0 if stop and start is not None else None
    curve = [
        ((e["time_ms"] - start) / 1000.0, float(e["value"]))
        for e in events
        if e["key"] == "eval_accuracy" and start is not None
    ]
    return seconds, status, curve


# What a run record adds to (or corrects in) the index entry.
RECORD_FIELDS = (
    "family",
    "model",
    "replicas",
    "global_batch_size",
    "epochs",
    "steps",
    "examples_per_second",
    "target_metric",
    "target_value",
    "target_direction",
)


def _latest(directory: Path, pattern: str) -> Path | None:
    found = sorted(directory.glob(pattern))
    return found[-1] if found else None


def load_run(entry: dict) -> RunResult:
    """A harness index entry joined with the run's newest JSON record and MLPerf log; the
    time to accuracy only for a run that reached its target."""
    result = RunResult(
        family=entry.get("family", entry["model"]),  # before spine v2, "model" was the family
        model=entry["model"],
        recipe=entry["recipe"],
        slice=entry["slice"],
        repeat=int(entry["repeat"]),
        status="aborted",
        error=entry.get("error", ""),
    )
    records = Path(entry["model_dir"]) / "records"
    record_path, log_path = _latest(records, "*.json"), _latest(records, "*.mlperf.log")
    record = json.loads(record_path.read_text()) if record_path else {}
    for name in RECORD_FIELDS:
        if name in record:
            setattr(result, name, record[name])
    if log_path:
        seconds, status, result.curve = mllog_timing(read_mllog(log_path))
        if status == "success" and entry.get("exit_code") == 0:
            result.status = "success"
            if record.get("time_to_accuracy_s") is not None:
                result.time_to_accuracy_s = seconds
    if result.status != "success" and not result.error:
        result.error = "no run record" if not record_path else "target not reached"
    return result


def load_runs(out_dir: str | Path) -> list[RunResult]:
    """Every run the harness indexed under out_dir (a run that failed is kept, as aborted)."""
    index = Path(out_dir) / INDEX
    if not index.exists():
        return []
    return [load_run(json.loads(line)) for line in index.read_text().splitlines() if line.strip()]
