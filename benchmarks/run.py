"""Time-to-accuracy runs: each (slice, repeat) in its own training process, gathered under --out.

python -m benchmarks.run --model=resnet --recipe=default --slices=cpu-1,cpu-2,cpu-4 \\
    --repeats=3 --out=DIR
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from absl import flags

import models  # noqa: F401 - quiets TensorFlow's C++ logs for the child processes too
from benchmarks.output import progress, run_cli
from benchmarks.records import INDEX, RunResult, load_run
from models.core.errors import UsageError
from models.core.strategy import parse_slice
from models.registry import CONFIGS_DIR, list_recipes

FLAGS = flags.FLAGS


def define_flags() -> None:
    flags.DEFINE_string("model", "resnet", "Model family (a package under models/).")
    flags.DEFINE_string("recipe", "default", "Recipe: configs/<model>/<recipe>.gin.")
    flags.DEFINE_list("slices", ["cpu-1", "cpu-2", "cpu-4"], "Slices: cpu-N, gpu-N or v3-N.")
    flags.DEFINE_integer("repeats", 3, "Runs per slice (seeds 0..repeats-1).")
    flags.DEFINE_string("out", None, "Directory for every run's model_dir and the index.")
    flags.DEFINE_string("tpu", None, "TPU name or address, for TPU slices.")
    flags.DEFINE_string("data_dir", None, "Dataset directory (default: built-in data).")
    flags.DEFINE_multi_string("gin_param", [], "Extra gin bindings for every run.")
    flags.DEFINE_integer("timeout_s", 3600, "A run still going after this is killed (aborted).")


def run_command(model: str, recipe: str, slice_name: str, seed: int, model_dir: Path) -> list[str]:
    """The training command of one run: recipe + slice file, stop at the recipe's target."""
    command = [sys.executable, "-m", f"models.{model}", f"--model_dir={model_dir}"]
    command += [f"--gin_file={model}/{recipe}.gin", f"--slice={slice_name}", f"--seed={seed}"]
    if (CONFIGS_DIR / "slices" / f"{slice_name}.gin").exists():
        command.append(f"--gin_file=slices/{slice_name}.gin")
    command += [f"--recipe={recipe}", "--mode=train_and_eval"]
    if FLAGS.tpu:
        command.append(f"--tpu={FLAGS.tpu}")
    if FLAGS.data_dir:
        command.append(f"--data_dir={FLAGS.data_dir}")
    return command + [f"--gin_param={p}" for p in FLAGS.gin_param]


def _check_flags() -> list[str]:
    if not FLAGS.out:
        raise UsageError("--out is required")
    if FLAGS.recipe not in list_recipes(FLAGS.model):
        known = ", ".join(list_recipes(FLAGS.model)) or "none"
        raise UsageError(f"no recipe '{FLAGS.recipe}' for model '{FLAGS.model}' (have: {known})")
    if FLAGS.repeats < 1:
        raise UsageError("--repeats must be at least 1")
    for name in FLAGS.slices:
        if parse_slice(name)[0] == "tpu" and not FLAGS.tpu:
            raise UsageError(f"--slices={name} is a TPU slice: pass --tpu as well")
    return FLAGS.slices


def _run_one(slice_name: str, repeat: int, out: Path) -> dict:
    """Runs one training process; returns its index entry (kept even when it fails)."""
    model_dir = out / FLAGS.model / FLAGS.recipe / slice_name / f"run-{repeat}"
    entry = {"model": FLAGS.model, "recipe": FLAGS.recipe, "slice": slice_name}
    entry.update(repeat=repeat, seed=repeat, model_dir=str(model_dir))
    command = run_command(FLAGS.model, FLAGS.recipe, slice_name, repeat, model_dir)
    entry["command"] = command
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=FLAGS.timeout_s)
        entry["exit_code"] = done.returncode
        if done.returncode:
            lines = [x for x in done.stderr.splitlines() if x.strip()]
            entry["error"] = lines[-1] if lines else f"exit code {done.returncode}"
    except subprocess.TimeoutExpired:
        entry.update(exit_code=None, error=f"killed after --timeout_s={FLAGS.timeout_s}")
    return entry


def _describe(result: RunResult) -> str:
    if result.status == "success":
        return (
            f"{result.time_to_accuracy_s:.1f} s to {result.target_metric} "
            f">= {result.target_value} (epoch {result.epochs:g})"
        )
    return f"ABORTED: {result.error}"


def run_all() -> dict:
    slices = _check_flags()
    out = Path(FLAGS.out)
    out.mkdir(parents=True, exist_ok=True)
    total, results = len(slices) * FLAGS.repeats, []
    for index, (slice_name, repeat) in enumerate(
        ((s, r) for s in slices for r in range(FLAGS.repeats)), start=1
    ):
        started = time.monotonic()
        entry = _run_one(slice_name, repeat, out)
        with open(out / INDEX, "a") as handle:
            handle.write(json.dumps(entry) + "\n")
        result = load_run(entry)
        results.append(result)
        progress(
            f"[{index}/{total}] {FLAGS.model} {FLAGS.recipe} {slice_name} seed {repeat}: "
            f"{_describe(result)} ({time.monotonic() - started:.0f} s wall)"
        )
    ok = sum(r.status == "success" for r in results)
    return {"out": str(out), "runs": total, "succeeded": ok, "aborted": total - ok}


def _render(result: dict) -> str:
    return (
        f"{result['succeeded']}/{result['runs']} runs reached the target; records in "
        f"{result['out']} (python -m benchmarks.report {result['out']})"
    )


def main() -> None:
    define_flags()
    run_cli("run", lambda _: run_all(), _render)


if __name__ == "__main__":
    main()
