"""Markdown table and PNG plots of time-to-accuracy runs: python -m benchmarks.report DIR."""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path

from absl import flags

from benchmarks.output import run_cli
from benchmarks.plots import plot_accuracy_vs_time, plot_tta_vs_slice
from benchmarks.records import RunResult, load_runs
from models.core.errors import UsageError

FLAGS = flags.FLAGS


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def summarize_slice(runs: list[RunResult]) -> dict:
    """Median/min/max time-to-accuracy over a slice's successful repeats, and more."""
    ok = [r for r in runs if r.status == "success"]
    times = [r.time_to_accuracy_s for r in ok]
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
        "epochs_median": _median([r.epochs for r in ok]),
        "examples_per_second_median": _median(
            [r.examples_per_second for r in ok if r.examples_per_second]
        ),
        "errors": sorted({r.error for r in runs if r.status != "success"}),
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


def summarize(runs: list[RunResult]) -> dict[str, list[dict]]:
    """Rows per 'model/recipe', slices ordered by replica count."""
    groups: dict[tuple, list[RunResult]] = defaultdict(list)
    for run in runs:
        groups[(f"{run.model}/{run.recipe}", run.slice)].append(run)
    tables: dict[str, list[dict]] = defaultdict(list)
    for (name, _), slice_runs in groups.items():
        tables[name].append(summarize_slice(slice_runs))
    for rows in tables.values():
        rows.sort(key=lambda r: (r["replicas"] or 0, r["slice"]))
        add_scaling(rows)
    return dict(tables)


def _fmt(value, spec: str = ".1f") -> str:
    return "-" if value is None else format(value, spec)


def markdown_table(name: str, rows: list[dict]) -> str:
    """One model's table; times are MLPerf run_start -> run_stop in seconds."""
    lines = [
        f"### {name}",
        "",
        "| slice | replicas | global batch | runs ok | time to accuracy median (min-max) s "
        "| epochs to target | examples/s | speed-up | scaling efficiency |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        tta = f"{_fmt(r['tta_median_s'])} ({_fmt(r['tta_min_s'])}-{_fmt(r['tta_max_s'])})"
        lines.append(
            f"| {r['slice']} | {_fmt(r['replicas'], 'd')} | {_fmt(r['global_batch_size'], 'd')} "
            f"| {r['succeeded']}/{r['runs']} | {tta} | {_fmt(r['epochs_median'], 'g')} "
            f"| {_fmt(r['examples_per_second_median'], ',.0f')} | {_fmt(r['speedup'], '.2f')}x "
            f"| {_fmt(r['scaling_efficiency'], '.0%')} |"
        )
    for r in rows:
        for error in r["errors"]:
            lines.append(f"\n{r['slice']} aborted: {error}")
    return "\n".join(lines)


def build_report(out_dir: str) -> dict:
    runs = load_runs(out_dir)
    if not runs:
        raise UsageError(f"no benchmark runs under {out_dir} (run python -m benchmarks.run first)")
    tables = summarize(runs)
    plots = []
    for name, rows in tables.items():
        safe = name.replace("/", "-")
        plots.append(plot_tta_vs_slice(name, rows, Path(out_dir) / f"{safe}-tta.png"))
        group = [r for r in runs if f"{r.model}/{r.recipe}" == name]
        plots.append(plot_accuracy_vs_time(name, group, Path(out_dir) / f"{safe}-accuracy.png"))
    return {"out": out_dir, "tables": tables, "plots": [str(p) for p in plots]}


def _render(report: dict) -> str:
    parts = [markdown_table(name, rows) for name, rows in report["tables"].items()]
    parts.append("Plots: " + ", ".join(report["plots"]))
    return "\n\n".join(parts)


def main() -> None:
    run_cli("report", lambda args: build_report(args[0]), _render, arg="DIR")


if __name__ == "__main__":
    main()
