"""Time-to-accuracy runs: each (slice, repeat) in its own training process, gathered under --out.

python -m benchmarks.run --recipe=resnet/default [--model=resnet34] \\
    --slices=cpu-1,cpu-2,cpu-4 --repeats=3 --out=DIR
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from absl import flags

import models  # noqa: F401 - quiets TensorFlow's C++ logs for the child processes too
from benchmarks import recipes
from benchmarks.output import progress, run_cli
from benchmarks.recipes import Recipe, load_recipe, model_bindings
from benchmarks.records import INDEX, RunResult, load_run
from models.core.errors import UsageError
from models.core.strategy import parse_slice

FLAGS = flags.FLAGS


def define_flags() -> None:
    recipes.define_flags(default_recipe="resnet/default")
    flags.DEFINE_list("slices", ["cpu-1", "cpu-2", "cpu-4"], "Slices: cpu-N, gpu-N or v3-N.")
    flags.DEFINE_integer("repeats", 3, "Runs per slice (seeds 0..repeats-1).")
    flags.DEFINE_string("out", None, "Directory for every run's model_dir and the index.")
    flags.DEFINE_string("tpu", None, "TPU name or address, for TPU slices.")
    flags.DEFINE_string("data_dir", None, "Dataset directory (default: built-in data).")
    flags.DEFINE_multi_string("gin_param", [], "Extra gin bindings for every run.")
    flags.DEFINE_integer("timeout_s", 3600, "A run still going after this is killed (aborted).")


def run_command(recipe: Recipe, slice_name: str, seed: int, model_dir: Path) -> list[str]:
    """The training command of one run: the recipe on the slice (--slice applies its slice
    file), --model as a binding, stop at the recipe's target."""
    command = [sys.executable, "-m", f"models.{recipe.family}", f"--model_dir={model_dir}"]
    command += [f"--gin_file={recipe.path}.gin", f"--slice={slice_name}", f"--seed={seed}"]
    command += [f"--recipe={recipe.name}", "--mode=train_and_eval"]
    if FLAGS.tpu:
        command.append(f"--tpu={FLAGS.tpu}")
    if FLAGS.data_dir:
        command.append(f"--data_dir={FLAGS.data_dir}")
    bindings = [*FLAGS.gin_param, *model_bindings(FLAGS.model)]
    return command + [f"--gin_param={binding}" for binding in bindings]


def _check_flags() -> Recipe:
    """The recipe the flags name, after every flag is checked."""
    if not FLAGS.out:
        raise UsageError("--out is required")
    if FLAGS.repeats < 1:
        raise UsageError("--repeats must be at least 1")
    for name in FLAGS.slices:
        if parse_slice(name)[0] == "tpu" and not FLAGS.tpu:
            raise UsageError(f"--slices={name} is a TPU slice: pass --tpu as well")
    return load_recipe(FLAGS.recipe, FLAGS.model, tuple(FLAGS.gin_param))


def _run_one(recipe: Recipe, slice_name: str, repeat: int, out: Path) -> dict:
    """Runs one training process; returns its index entry (kept even when it fails)."""
    model_dir = out / recipe.path / recipe.model / slice_name / f"run-{repeat}"
    entry = {"family": recipe.family, "model": recipe.model, "recipe": recipe.name}
    entry.update(slice=slice_name, repeat=repeat, seed=repeat, model_dir=str(model_dir))
    command = run_command(recipe, slice_name, repeat, model_dir)
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


def describe(result: RunResult) -> str:
    """How one run ended, e.g. '12.3 s to wer <= 0.2 (epoch 3)'."""
    if result.status != "success":
        return f"ABORTED: {result.error}"
    where = f"epoch {result.epochs:g}" if result.epochs is not None else f"step {result.steps}"
    if result.time_to_accuracy_s is None:
        return f"finished, no target ({where})"
    return f"{result.time_to_accuracy_s:.1f} s to {result.target} ({where})"


def run_all() -> dict:
    recipe = _check_flags()
    out = Path(FLAGS.out)
    out.mkdir(parents=True, exist_ok=True)
    runs = [(s, r) for s in FLAGS.slices for r in range(FLAGS.repeats)]
    results = []
    for index, (slice_name, repeat) in enumerate(runs, start=1):
        started = time.monotonic()
        entry = _run_one(recipe, slice_name, repeat, out)
        with open(out / INDEX, "a") as handle:
            handle.write(json.dumps(entry) + "\n")
        result = load_run(entry)
        results.append(result)
        progress(
            f"[{index}/{len(runs)}] {recipe.path} {recipe.model} {slice_name} seed {repeat}: "
            f"{describe(result)} ({time.monotonic() - started:.0f} s wall)"
        )
    ok = sum(r.status == "success" for r in results)
    summary = {"out": str(out), "family": recipe.family, "model": recipe.model}
    summary.update(recipe=recipe.path, runs=len(runs), succeeded=ok, aborted=len(runs) - ok)
    return summary


def _render(result: dict) -> str:
    return (
        f"{result['recipe']} ({result['model']}): {result['succeeded']}/{result['runs']} runs "
        f"succeeded; records in {result['out']} (python -m benchmarks.report {result['out']})"
    )


def main() -> None:
    define_flags()
    run_cli("run", lambda _: run_all(), _render)


if __name__ == "__main__":
    main()
