"""Paths and CLI helpers the tests share (imported by name; pytest puts tests/ on sys.path)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from models.data.builtin.cache import BUILDING, PROGRESS_INDENT

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
# The registered tasks of detectors (trained on the built-in scenes, COCO's classes full size).
DETECTION_TASKS = ("DetectionTask", "InstanceSegmentationTask")


def plan(steps_per_epoch: int | None, total_steps: int, global_batch_size: int):
    """A StepPlan of that shape and no evaluations, for building schedules and optimisers."""
    from models.core.durations import Clock
    from models.core.settings import StepPlan

    clock = Clock(global_batch_size, steps_per_epoch)
    return StepPlan(clock, total_steps, total_steps, total_steps, evaluations={})


def run_info(**changes):
    """The RunInfo of a default ResNet recipe run on cpu-2, with `changes`."""
    from models.core.records import RunInfo

    info = {
        "model": "resnet18",
        "family": "resnet",
        "recipe": "default",
        "slice": "cpu-2",
        "replicas": 2,
        "global_batch_size": 64,
        "precision": "float32",
        "seed": 0,
        "target_metric": "top_1_accuracy",
        "target_value": 0.97,
    }
    return RunInfo(**{**info, **changes})


def model_command(family: str, model_dir, *args: str) -> list[str]:
    """`python -m models.<family> --model_dir=... ARGS`, as a user types it."""
    return [PYTHON, "-m", f"models.{family}", f"--model_dir={model_dir}", *args]


def run_model(
    family: str, model_dir, *args: str, env: dict, timeout: int = 900
) -> subprocess.CompletedProcess:
    """Runs a model's CLI in a subprocess and captures its output."""
    return subprocess.run(
        model_command(family, model_dir, *args),
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )


def run_converter(name: str, *args: str, env: dict) -> subprocess.CompletedProcess:
    """Runs `python -m models.data.convert.<name> ARGS` as its users do."""
    command = [PYTHON, "-m", f"models.data.convert.{name}", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)


def latest_record(model_dir) -> dict:
    """The newest JSON run record in model_dir/records."""
    records = sorted((Path(model_dir) / "records").glob("*.json"))
    assert records, f"no run record in {model_dir}"
    return json.loads(records[-1].read_text())


def event_file_steps(path) -> dict[str, list[int]]:
    """Every tag in one TensorBoard event file: the steps it was written at."""
    import tensorflow as tf

    steps: dict[str, list[int]] = {}
    for event in tf.compat.v1.train.summary_iterator(str(path)):
        for value in event.summary.value:
            steps.setdefault(value.tag, []).append(event.step)
    return steps


def event_files(folder) -> list[Path]:
    """The TensorBoard event files of `folder`, oldest first."""
    return sorted(Path(folder).glob("events.out.tfevents.*"))


def summary_steps(folder) -> dict[str, list[int]]:
    """Every tag in the TensorBoard event files of `folder`: the steps it was written at."""
    steps: dict[str, list[int]] = {}
    for path in event_files(folder):
        for tag, written in event_file_steps(path).items():
            steps.setdefault(tag, []).extend(written)
    return steps


def checkpoint_files(model_dir) -> dict[str, bytes]:
    """Every checkpoint file in model_dir with its contents."""
    root = Path(model_dir)
    if not root.exists():
        return {}
    names = ("ckpt", "checkpoint")
    return {
        p.name: p.read_bytes() for p in root.iterdir() if p.name.startswith(names) and p.is_file()
    }


def latest_step(model_dir) -> int:
    """Step of the newest intact checkpoint in model_dir's files (0 when there is none): what a
    rerun resumes from, even when a kill came between a save and its state-file update."""
    from models.core.checkpoint import intact_checkpoints

    prefixes = intact_checkpoints(str(model_dir))
    return int(prefixes[-1].rsplit("-", 1)[1]) if prefixes else 0


def wait_for(predicate: Callable[[], bool], process: subprocess.Popen, timeout: float = 600):
    """Polls predicate until true; fails if the process exits first or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        assert process.poll() is None, process.communicate()[1][-3000:]
        time.sleep(0.2)
    raise AssertionError("timed out")


def one_error_line(result: subprocess.CompletedProcess) -> str:
    """The single `error: ...` line of a run that exited with code 2 and no traceback."""
    assert result.returncode == 2, result.stderr[-3000:]
    assert "Traceback" not in result.stderr + result.stdout, result.stderr[-3000:]
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    # a first use's build: its notice and progress
    lines = [line for line in lines if not line.startswith((BUILDING, PROGRESS_INDENT))]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr[-3000:]
    return lines[0]


def restorable_checkpoints(model_dir) -> list[str]:
    """Every ckpt-<step> prefix in model_dir, each opened and read in full (TensorFlow's
    reader, no model needed)."""
    import tensorflow as tf

    prefixes = sorted(str(p.with_suffix("")) for p in Path(model_dir).glob("ckpt-*.index"))
    for prefix in prefixes:
        reader = tf.train.load_checkpoint(prefix)
        for name in reader.get_variable_to_shape_map():
            reader.get_tensor(name)
    return prefixes


def two_scene_jpegs(scenes_dir) -> list[bytes]:
    """Two built-in validation scenes as JPEG bytes: the first as written (128x128), the
    second resized to 256x192, so that a detector's serving signature meets two sizes."""
    import tensorflow as tf

    images = sorted(Path(scenes_dir, "images", "val").glob("*.jpg"))[:2]
    resized = tf.image.resize(tf.io.decode_jpeg(images[1].read_bytes()), [256, 192])
    return [images[0].read_bytes(), tf.io.encode_jpeg(tf.cast(resized, tf.uint8)).numpy()]
