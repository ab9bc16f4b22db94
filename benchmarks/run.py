"""Time-to-accuracy runs: each (slice, repeat) in its own training process, gathered under --out.

python -m benchmarks.run --recipe=resnet/default [--model=resnet34] \\
    --slices=cpu-1,cpu-2,cpu-4 --repeats=3 --out=DIR
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from absl import flags

import models  # noqa: F401 - quiets TensorFlow's C++ logs for the child processes too
from benchmarks import recipes
from benchmarks.output import progress, run_cli
from benchmarks.recipes import Recipe, load_recipe, model_bindings
from benchmarks.records import INDEX, RunResult, load_run
from models.core.errors import PREEMPTED_EXIT_CODE, UsageError
from models.core.strategy import parse_slice

FLAGS = flags.FLAGS
ABORTED_EXIT_CODE = 1  # some run aborted; bad input is 2 (models.core.errors)


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


def run_dir(out: Path, recipe_path: str, model: str, slice_name: str, repeat: int) -> Path:
    """The model_dir of one (slice, repeat) run under --out."""
    return out / recipe_path / model / slice_name / f"run-{repeat}"


def _run_one(recipe: Recipe, slice_name: str, repeat: int, out: Path) -> dict:
    """Runs one training process; returns its index entry (kept even when it fails)."""
    model_dir = run_dir(out, recipe.path, recipe.model, slice_name, repeat)
    entry = {"family": recipe.family, "model": recipe.model, "recipe": recipe.name}
    entry.update(slice=slice_name, repeat=repeat, seed=repeat, model_dir=str(model_dir))
    command = run_command(recipe, slice_name, repeat, model_dir)
    entry["command"] = command
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=FLAGS.timeout_s)
        entry["exit_code"] = done.returncode
        if done.returncode:
            entry["error"] = error_line(done.stderr, done.returncode)
    except subprocess.TimeoutExpired:
        entry.update(exit_code=None, error=f"killed after --timeout_s={FLAGS.timeout_s}")
    return entry


def error_line(stderr: str, exit_code: int) -> str:
    """Why a run failed, in one line: its last `error: ...` line, else the first line of a
    traceback's exception, else its last line of stderr, else its exit code."""
    if exit_code == PREEMPTED_EXIT_CODE:
        return f"preempted (exit code {exit_code}): rerun with the same --out to resume"
    lines = [line for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error: ")]
    if errors:
        return errors[-1]
    if "Traceback (most recent call last):" in lines:
        after = lines[len(lines) - lines[::-1].index("Traceback (most recent call last):") :]
        raised = [line for line in after if not line.startswith(" ")]
        if raised:
            return raised[0]
    if lines:
        return lines[-1]
    return f"killed by signal {-exit_code}" if exit_code < 0 else f"exit code {exit_code}"


def describe(result: RunResult) -> str:
    """How one run ended, e.g. '12.3 s to wer <= 0.2 (epoch 3)'."""
    if result.status != "success":
        return f"ABORTED: {result.error}"
    where = f"epoch {result.epochs:g}" if result.epochs is not None else f"step {result.steps}"
    if result.resumed:
        where += f", resumed at step {result.resumed_from_step}, {len(result.segments)} segments"
    if result.time_to_accuracy_s is None:
        return f"finished, no target ({where})"
    return f"{result.time_to_accuracy_s:.1f} s to {result.target_text} ({where})"


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
    return summarize(recipe, out, results)


def summarize(recipe: Recipe, out: Path, results: list[RunResult]) -> dict:
    """The command's result: counts, and each aborted run's slice, seed and reason."""
    failed = [r for r in results if r.status != "success"]
    summary = {"out": str(out), "family": recipe.family, "model": recipe.model}
    summary.update(recipe=recipe.path, runs=len(results), succeeded=len(results) - len(failed))
    summary["aborted"] = len(failed)
    summary["failures"] = [{"slice": r.slice, "seed": r.repeat, "error": r.error} for r in failed]
    return summary


def _reasons(failures: list[dict]) -> str:
    """'2 x error: ...; 1 x target not reached', most frequent first."""
    counts = Counter(failure["error"] for failure in failures)
    return "; ".join(f"{count} x {error}" for error, count in counts.most_common())


def _render(result: dict) -> str:
    line = f"{result['recipe']} ({result['model']}): {result['succeeded']}/{result['runs']} runs "
    line += "succeeded"
    if result["aborted"]:
        line += f", {result['aborted']} aborted ({_reasons(result['failures'])})"
    return f"{line}; records in {result['out']} (python -m benchmarks.report {result['out']})"


def exit_code(result: dict) -> int:
    """1 when any run aborted (failed, was killed or missed its target), else 0."""
    return ABORTED_EXIT_CODE if result["aborted"] else 0


def main() -> None:
    define_flags()
    run_cli("run", lambda _: run_all(), _render, exit_code=exit_code)


if __name__ == "__main__":
    main()
