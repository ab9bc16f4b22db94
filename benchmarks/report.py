"""Markdown table and PNG plots of time-to-accuracy runs: python -m benchmarks.report DIR.

One table per recipe and variant trained; the target reads as its run records wrote it
(`top_1_accuracy >= 0.97`, `wer <= 0.2`), and runs without a target have no time to accuracy.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path

from benchmarks.output import format_number, run_cli
from benchmarks.plots import plot_metric_vs_time, plot_tta_vs_slice
from benchmarks.records import RunResult, load_runs
from models.core.errors import UsageError


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def summarize_slice(runs: list[RunResult]) -> dict:
    """Median/min/max time-to-accuracy over a slice's repeats that reached the target, and more."""
    ok = [r for r in runs if r.status == "success"]
    times = [r.time_to_accuracy_s for r in ok if r.time_to_accuracy_s is not None]
    first = runs[0]
    known = next((r for r in runs if r.replicas), first)
    return {
        "slice": first.slice,
        "replicas": known.replicas,
        "global_batch_size": known.global_batch_size,
        "runs": len(runs),
        "succeeded": len(ok),
        "tta_median_s": _median(times),
        "tta_min_s": min(times) if times else None,
        "tta_max_s": max(times) if times else None,
        "epochs_median": _median([r.epochs for r in ok if r.epochs is not None]),
        "examples_per_second_median": _median(
            [r.examples_per_second for r in ok if r.examples_per_second]
        ),
        "errors": sorted({r.error for r in runs if r.status != "success"}),
        "resumed": [_resumed(r) for r in runs if r.resumed],
    }


def _resumed(run: RunResult) -> dict:
    """A resumed run: its seed, the step it resumed from and its segments."""
    return {
        "seed": run.repeat,
        "resumed_from_step": run.resumed_from_step,
        "segments": run.segments,
    }


def add_scaling(rows: list[dict]) -> None:
    """Speed-up and scaling efficiency of each slice against the smallest one that succeeded."""
    base = next((r for r in rows if r["tta_median_s"]), None)
    for row in rows:
        if base is None or not row["tta_median_s"] or not row["replicas"]:
            row["speedup"] = row["scaling_efficiency"] = None
            continue
        row["speedup"] = base["tta_median_s"] / row["tta_median_s"]
        row["scaling_efficiency"] = row["speedup"] / (row["replicas"] / base["replicas"])


def summarize_group(runs: list[RunResult]) -> dict:
    """One recipe and variant: its target and a row per slice, ordered by replica count."""
    slices: dict[str, list[RunResult]] = defaultdict(list)
    for run in runs:
        slices[run.slice].append(run)
    rows = sorted(
        (summarize_slice(group) for group in slices.values()),
        key=lambda r: (r["replicas"] or 0, r["slice"]),
    )
    add_scaling(rows)
    target = next((r.target_text for r in runs if r.target), None)
    first = runs[0]
    return {
        "recipe": first.recipe_path,
        "family": first.family,
        "model": first.model,
        "target": target,
        "rows": rows,
    }


def summarize(runs: list[RunResult]) -> list[dict]:
    """A table per (recipe, variant), in the order the runs were indexed."""
    groups: dict[tuple[str, str], list[RunResult]] = defaultdict(list)
    for run in runs:
        groups[(run.recipe_path, run.model)].append(run)
    return [summarize_group(group) for group in groups.values()]


def _title(table: dict) -> str:
    return f"{table['recipe']} ({table['model']})"


def _tta_cell(row: dict) -> str:
    """'median (min-max)' seconds, or '-' where no run reached a target."""
    if row["tta_median_s"] is None:
        return "-"
    low, high = row["tta_min_s"], row["tta_max_s"]
    return f"{row['tta_median_s']:.1f} ({low:.1f}-{high:.1f})"


def _speedup_cell(row: dict) -> str:
    return "-" if row["speedup"] is None else f"{row['speedup']:.2f}x"


def _ok_cell(row: dict) -> str:
    """'2/3', or '2/3 (1 resumed)' when runs resumed from a checkpoint."""
    cell = f"{row['succeeded']}/{row['runs']}"
    return f"{cell} ({len(row['resumed'])} resumed)" if row["resumed"] else cell


def _segments_text(segments: list[dict]) -> str:
    """E.g. 'steps 0-120 in 5.0 s (aborted), 120-200 in 4.1 s (success)'."""
    parts = [
        f"{s.get('first_step')}-{s.get('last_step')} in {s.get('seconds') or 0:.1f} s "
        f"({s.get('status')})"
        for s in segments
    ]
    return "steps " + ", ".join(parts)


def resumed_lines(row: dict) -> list[str]:
    """One line per resumed run of a slice: where it resumed and its segments."""
    return [
        f"{row['slice']} seed {run['seed']} resumed at step {run['resumed_from_step']}, "
        f"{len(run['segments'])} segments (time summed over them): "
        f"{_segments_text(run['segments'])}"
        for run in row["resumed"]
    ]


def markdown_table(table: dict) -> str:
    """One recipe's table; times are MLPerf run_start -> run_stop in seconds (summed over the
    segments of a resumed run)."""
    target = table["target"] or "none (runs train their full length; no time to accuracy)"
    lines = [
        f"### {_title(table)}",
        "",
        f"target: {target}",
        "",
        "| slice | replicas | global batch | runs ok | time to accuracy median (min-max) s "
        "| epochs to target | examples/s | speed-up | scaling efficiency |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in table["rows"]:
        lines.append(
            f"| {r['slice']} | {format_number(r['replicas'], 'd')} "
            f"| {format_number(r['global_batch_size'], 'd')} | {_ok_cell(r)} "
            f"| {_tta_cell(r)} | {format_number(r['epochs_median'], 'g')} "
            f"| {format_number(r['examples_per_second_median'], ',.0f')} "
            f"| {_speedup_cell(r)} "
            f"| {format_number(r['scaling_efficiency'], '.0%')} |"
        )
    for r in table["rows"]:
        for error in r["errors"]:
            lines.append(f"\n{r['slice']} aborted: {error}")
        lines.extend(f"\n{line}" for line in resumed_lines(r))
    return "\n".join(lines)


def build_report(out_dir: str) -> dict:
    runs = load_runs(out_dir)
    if not runs:
        raise UsageError(f"no benchmark runs under {out_dir} (run python -m benchmarks.run first)")
    tables = summarize(runs)
    plots = []
    for table in tables:
        stem = Path(out_dir) / f"{table['recipe'].replace('/', '-')}-{table['model']}"
        group = [r for r in runs if (r.recipe_path, r.model) == (table["recipe"], table["model"])]
        tta_plot = Path(f"{stem}-tta.png")
        plots.append(plot_tta_vs_slice(_title(table), table["rows"], table["target"], tta_plot))
        plots.append(plot_metric_vs_time(_title(table), group, Path(f"{stem}-metric.png")))
    return {"out": out_dir, "tables": tables, "plots": [str(p) for p in plots]}


def _render(report: dict) -> str:
    parts = [markdown_table(table) for table in report["tables"]]
    parts.append("Plots: " + ", ".join(report["plots"]))
    return "\n\n".join(parts)


def main() -> None:
    run_cli("report", lambda args: build_report(args[0]), _render, arg="DIR")


if __name__ == "__main__":
    main()
