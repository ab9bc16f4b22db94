"""`make acceptance`: every family's default recipe trained to its target on one replica
(`benchmarks.run --slices=cpu-1 --repeats=1`), BERT's fine-tuning recipes from that pretraining
run, then one table and one plot over all of them. Exits 1 naming each run that missed its
target (or failed).

    python -m benchmarks.acceptance [--families=bert,deeplab] [--out=runs/acceptance]

Each run starts afresh (its earlier folder under --out is removed first); runs land under
OUT/<family>/<recipe>/<model>/cpu-1/run-0 with the index OUT/runs.jsonl, so
`python -m benchmarks.report OUT` shows them as benchmarks.run's do.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from absl import flags

from benchmarks.export_checks import CHECKS as EXPORT_CHECKS
from benchmarks.export_checks import ExportCheck, check_export
from benchmarks.output import format_number, progress, run_cli
from benchmarks.plots import plot_tta_by_recipe
from benchmarks.recipes import families as registered_families
from benchmarks.records import RunResult, load_runs
from benchmarks.run import run_dir
from models.core.errors import UsageError, nearest

FLAGS = flags.FLAGS
SLICE = "cpu-1"
# Recipes trained from another run's weights: (recipe, the run it starts from).
FINE_TUNING = {"bert": (("bert/glosses", "bert/default"), ("bert/squad", "bert/default"))}
TABLE = "acceptance.md"
PLOT = "acceptance.png"


def define_flags() -> None:
    flags.DEFINE_string(
        "families", "", "Families to run, comma- or space-separated (default: all)."
    )
    flags.DEFINE_string("out", "runs/acceptance", "Directory for every run and the index.")
    flags.DEFINE_integer("timeout_s", 3600, "A run still going after this is killed (aborted).")


def chosen_families(text: str) -> list[str]:
    """The families `text` names (comma- or space-separated), checked against the registry;
    every family when it names none."""
    known = registered_families()
    wanted = [name for name in re.split(r"[\s,]+", text) if name]
    for name in wanted:
        if name not in known:
            raise UsageError(f"--families: unknown family '{name}'{nearest(name, known)}")
    return wanted or known


def train(recipe: str, out: Path, bindings: tuple[str, ...] = (), timeout_s: int = 3600) -> dict:
    """One `benchmarks.run` of the recipe on cpu-1 (its progress on stderr); its summary."""
    shutil.rmtree(out / recipe, ignore_errors=True)
    command = [sys.executable, "-m", "benchmarks.run", f"--recipe={recipe}", f"--slices={SLICE}"]
    command += ["--repeats=1", f"--out={out}", f"--timeout_s={timeout_s}", "--json"]
    command += [f"--gin_param={binding}" for binding in bindings]
    started = time.monotonic()
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True)
    if done.returncode == 2 or not done.stdout.strip():
        raise UsageError(f"benchmarks.run --recipe={recipe} failed (exit code {done.returncode})")
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    summary["wall_s"] = time.monotonic() - started
    return summary


def run_family(family: str, out: Path, timeout_s: int) -> list[dict]:
    """The family's default recipe, then the recipes fine-tuned from it."""
    summaries = [train(f"{family}/default", out, timeout_s=timeout_s)]
    for recipe, start in FINE_TUNING.get(family, ()):
        pretrained = run_dir(out, start, summaries[0]["model"], SLICE, 0)
        init = (f"train.init_checkpoint = '{pretrained}'",)
        summaries.append(train(recipe, out, init, timeout_s))
    return summaries


def accept(out: Path, families: list[str], timeout_s: int = 3600) -> dict:
    """Runs the families' recipes; the table's rows, the plot and the runs that missed."""
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    summaries = []
    for family in families:
        progress(f"acceptance: {family}")
        summaries += run_family(family, out, timeout_s)
    newest = {(r.recipe_path, r.model): r for r in load_runs(out)}
    rows = [row(newest[(s["recipe"], s["model"])], s["wall_s"]) for s in summaries]
    for r in rows:
        r["export"] = exported(r, out)
    plot = plot_tta_by_recipe(rows, out / PLOT)
    result = {"out": str(out), "rows": rows, "plot": str(plot)}
    result["seconds"] = time.monotonic() - started
    result["missed"] = [
        f"{r['recipe']} ({r['model']}, {SLICE}): {r['error']}" for r in rows if r["error"]
    ] + [
        f"{r['recipe']} ({r['model']}, {SLICE}): {r['export']}"
        for r in rows
        if r["export"] and not r["export"].passed
    ]
    (out / TABLE).write_text(render(result) + "\n")
    return result


def exported(r: dict, out: Path) -> ExportCheck | None:
    """The recipe's export check (benchmarks/export_checks.py) on its run, once it reached its
    target; None for a recipe without one or a run that missed."""
    if r["error"] or r["recipe"] not in EXPORT_CHECKS:
        return None
    progress(f"acceptance: export check of {r['recipe']}")
    try:
        return check_export(r["recipe"], run_dir(out, r["recipe"], r["model"], SLICE, 0))
    except (RuntimeError, OSError, ValueError) as error:  # named in the table, not a traceback
        return ExportCheck(f"export check failed ({error})", float("nan"), 0.0)


def row(run: RunResult, wall_s: float) -> dict:
    """One recipe's line of the table."""
    return {
        "recipe": run.recipe_path,
        "model": run.model,
        "target": run.target_text,
        "status": run.status,
        "time_to_target_s": run.time_to_accuracy_s,
        "epochs": run.epochs,
        "steps": run.steps,
        "examples_per_second": run.examples_per_second,
        "wall_s": wall_s,
        "error": run.error if run.status != "success" else "",
    }


def render(result: dict) -> str:
    lines = [
        "| recipe | model | target | reached | time to target (s) | epochs or steps "
        "| examples/s | whole run (s) | export check |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        length = f"{r['epochs']:g} epochs" if r["epochs"] is not None else f"{r['steps']} steps"
        lines.append(
            f"| {r['recipe']} | {r['model']} | {r['target'] or '-'} "
            f"| {'yes' if r['status'] == 'success' else 'NO'} "
            f"| {format_number(r['time_to_target_s'], '.1f')} | {length} "
            f"| {format_number(r['examples_per_second'], ',.0f')} | {r['wall_s']:.0f} "
            f"| {r.get('export') or '-'} |"
        )
    lines.append(f"\nWhole command: {result['seconds']:.0f} s. Plot: {result['plot']}")
    lines += [f"missed: {line}" for line in result["missed"]]
    return "\n".join(lines)


def main() -> None:
    define_flags()

    def compute(_) -> dict:
        return accept(Path(FLAGS.out), chosen_families(FLAGS.families), FLAGS.timeout_s)

    run_cli("acceptance", compute, render, exit_code=lambda r: 1 if r["missed"] else 0)


if __name__ == "__main__":
    main()
