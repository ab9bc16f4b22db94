"""Reads what benchmark runs leave behind: the harness index, JSON records and MLPerf logs."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.output import progress
from models.core.errors import UsageError
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
    resumed: bool = False  # from a checkpoint: the time is summed over the record's segments
    resumed_from_step: int | None = None
    segments: list[dict] = field(default_factory=list)  # oldest first, as the record lists them
    epochs: float | None = None  # None when the dataset's size is unknown
    steps: int | None = None
    examples_per_second: float | None = None
    target_metric: str | None = None
    target_value: float | None = None
    target_direction: str | None = None  # "higher" or "lower": which way the metric improves
    also_reach: dict | None = None  # further targets the run needed (train.also_reach)
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

    @property
    def target_text(self) -> str | None:
        """The target as the run needed it: 'AP >= 0.45, also mask_AP 0.2' (None: no target)."""
        if self.target is None:
            return None
        also = ", ".join(f"{name} {value:g}" for name, value in (self.also_reach or {}).items())
        return f"{self.target}, also {also}" if also else str(self.target)


def _json_line(text: str, where: str, what: str):
    """json.loads(text), or UsageError naming `where` (file and line) and `what` it should be."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        line = f"line {error.lineno} " if error.lineno > 1 else ""
        raise UsageError(f"{where}: not {what} ({error.msg}: {line}column {error.colno})") from None


def read_mllog(path: str | Path) -> list[dict]:
    """The events of an MLPerf-format log, in order."""
    events = []
    lines = Path(path).read_text(errors="replace").splitlines()
    for number, line in enumerate(lines, start=1):
        if MLLOG_PREFIX in line:
            text = line.split(MLLOG_PREFIX, 1)[1]
            event = _json_line(text, f"{path} line {number}", "an MLPerf event")
            if not isinstance(event, dict) or not {"key", "time_ms"} <= event.keys():
                raise UsageError(f"{path} line {number}: not an MLPerf event (no key or time_ms)")
            events.append(event)
    return events


def mllog_timing(events: list[dict]) -> tuple[float | None, str]:
    """(run_start -> run_stop seconds, run_stop status) from MLPerf events."""
    start = next((e["time_ms"] for e in events if e["key"] == "run_start"), None)
    stop = next((e for e in events if e["key"] == "run_stop"), None)
    status = stop["metadata"].get("status", "aborted") if stop else "aborted"
    seconds = (stop["time_ms"] - start) / 1000.0 if stop and start is not None else None
    return seconds, status


def record_curve(record: dict) -> list[tuple[float, float]]:
    """(seconds since run_start, the target metric) of each evaluation in a JSON record (not
    the MLPerf log's eval_accuracy, which takes each benchmark's own shape and scale)."""
    metric = record.get("target_metric")
    points = record.get("eval_curve") or []
    return [(float(p["seconds"]), float(p[metric])) for p in points if metric in p]


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
    "also_reach",
    "resumed",
    "resumed_from_step",
    "segments",
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
    record = _read_record(record_path) if record_path else {}
    for name in RECORD_FIELDS:
        if name in record:
            setattr(result, name, record[name])
    if log_path:
        seconds, status = mllog_timing(read_mllog(log_path))
        earlier = result.segments[:-1] if result.resumed else []
        before = sum(float(s.get("seconds") or 0.0) for s in earlier)
        curve = record_curve(record)
        result.curve = [(t + before, value) for t, value in curve]  # from the first run_start
        if status == "success" and entry.get("exit_code") == 0:
            result.status = "success"
            if record.get("time_to_accuracy_s") is not None:
                # One segment's log times one segment; a resumed record sums its segments.
                result.time_to_accuracy_s = (
                    record["time_to_accuracy_s"] if result.resumed else seconds
                )
    if result.status != "success" and not result.error:
        result.error = "no run record" if not record_path else "target not reached"
    return result


def _read_record(path: Path) -> dict:
    """A run's JSON record, or UsageError naming the file."""
    record = _json_line(path.read_text(errors="replace"), str(path), "a JSON run record")
    if not isinstance(record, dict):
        raise UsageError(f"{path}: not a JSON run record (a JSON {type(record).__name__})")
    segments = record.get("segments", [])
    if not isinstance(segments, list) or not all(isinstance(x, dict) for x in segments):
        raise UsageError(f"{path}: the record's segments are not a list of objects")
    return record


ENTRY_KEYS = ("model", "recipe", "slice", "repeat", "model_dir")


def _checked_entry(entry, where: str) -> dict:
    """`entry` if it is an index entry (a JSON object with ENTRY_KEYS), else UsageError."""
    if not isinstance(entry, dict):
        raise UsageError(f"{where}: not an index entry (a JSON {type(entry).__name__})")
    missing = [key for key in ENTRY_KEYS if key not in entry]
    if missing:
        raise UsageError(f"{where}: index entry without {', '.join(missing)}")
    if not isinstance(entry["repeat"], int):
        raise UsageError(f"{where}: index entry's repeat is not a whole number")
    return entry


def _cut_short(line: str, number: int, lines: list[str], text: str) -> bool:
    """Whether `line` is the last one, without its newline, and not JSON: a write cut short."""
    if number != len(lines) or text.endswith("\n"):
        return False
    try:
        json.loads(line)
    except ValueError:
        return True
    return False


def read_index(index: Path) -> list[dict]:
    """The harness index's entries, one per model_dir (a rerun's entry replaces the earlier
    one). A corrupt line is a UsageError naming it; a last line cut short without its newline
    (a harness killed mid-write) is skipped with a warning."""
    text = index.read_text(errors="replace")
    lines = text.splitlines()
    entries: dict[str, dict] = {}
    for number, line in enumerate(lines, start=1):
        where = f"{index} line {number}"
        if not line.strip():
            continue
        if _cut_short(line, number, lines, text):
            progress(f"warning: {where} is cut short (a harness killed mid-write?); skipped")
            continue
        entry = _checked_entry(_json_line(line, where, "a JSON index entry"), where)
        entries[str(entry["model_dir"])] = entry
    return list(entries.values())


def load_runs(out_dir: str | Path) -> list[RunResult]:
    """Every run the harness indexed under out_dir (a run that failed is kept, as aborted)."""
    index = Path(out_dir) / INDEX
    if not index.exists():
        return []
    return [load_run(entry) for entry in read_index(index)]
