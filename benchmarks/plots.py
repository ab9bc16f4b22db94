"""PNG plots of benchmark runs (matplotlib, no display needed)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from benchmarks.records import RunResult  # noqa: E402


def plot_tta_vs_slice(name: str, rows: list[dict], target: str | None, path: Path) -> Path:
    """Median time to `target` (e.g. 'wer <= 0.2'; min-max bars) against replicas (log2 axis)."""
    ok = [r for r in rows if r["tta_median_s"]]
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    if ok:
        x = [r["replicas"] for r in ok]
        y = [r["tta_median_s"] for r in ok]
        low = [r["tta_median_s"] - r["tta_min_s"] for r in ok]
        high = [r["tta_max_s"] - r["tta_median_s"] for r in ok]
        ax.errorbar(x, y, yerr=[low, high], marker="o", capsize=4, label="median (min-max)")
        ideal = [y[0] * x[0] / xi for xi in x]
        ax.plot(x, ideal, linestyle="--", color="gray", label="linear scaling")
        ax.set_xscale("log", base=2)
        ax.set_xticks(x, [f"{r['replicas']}\n{r['slice']}" for r in ok])
        ax.set_ylim(bottom=0)
        ax.legend()
    else:
        ax.text(0.5, 0.5, "no run reached a target", ha="center", transform=ax.transAxes)
    ax.set_xlabel("slice size (replicas)")
    ax.set_ylabel(f"time to {target or 'accuracy'} (s, MLPerf run_start to run_stop)")
    ax.set_title(f"{name}: time to accuracy by slice")
    ax.grid(True, which="both", alpha=0.3)
    return _save(fig, path)


def plot_metric_vs_time(name: str, runs: list[RunResult], path: Path) -> Path:
    """The target metric against wall-clock seconds since run_start, one colour per slice; the
    target line is labelled with its comparison (>= or <=, as the records say)."""
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    slices = sorted(
        {r.slice for r in runs},
        key=lambda s: next((r.replicas or 0 for r in runs if r.slice == s), 0),
    )
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    target = next((r.target for r in runs if r.target), None)
    for i, slice_name in enumerate(slices):
        for j, run in enumerate(r for r in runs if r.slice == slice_name and r.curve):
            seconds, values = zip(*run.curve, strict=True)
            ax.plot(
                seconds,
                values,
                marker=".",
                color=colours[i % len(colours)],
                alpha=0.8,
                label=slice_name if j == 0 else None,
            )
    metric, label = "eval metric", "eval metric (MLPerf logs it only for a target)"
    if target is not None:
        ax.axhline(target.value, linestyle="--", color="gray", label=f"target: {target}")
        metric, label = target.metric, f"{target.metric} ({target.direction} is better)"
    ax.set_xlabel("wall-clock time since the first run_start (s)")
    ax.set_ylabel(label)
    ax.set_title(f"{name}: {metric} over time")
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend()
    return _save(fig, path)


def plot_tta_by_recipe(rows: list[dict], path: Path) -> Path:
    """Time to target of each recipe's run (`benchmarks.acceptance` rows), one bar each; a run
    that missed its target is a red bar of its whole run, labelled `missed`."""
    fig, ax = plt.subplots(figsize=(10.0, 0.45 * len(rows) + 1.4), dpi=120)
    names = [f"{r['recipe']} ({r['target'] or 'no target'})" for r in rows]
    reached = [r["status"] == "success" and r["time_to_target_s"] is not None for r in rows]
    pairs = zip(rows, reached, strict=True)
    seconds = [r["time_to_target_s"] if ok else r["wall_s"] for r, ok in pairs]
    colours = ["tab:blue" if ok else "tab:red" for ok in reached]
    ax.barh(names, seconds, color=colours)
    for y, (value, ok) in enumerate(zip(seconds, reached, strict=True)):
        ax.text(value, y, f" {value:.0f} s" if ok else " missed", va="center")
    ax.set_xlim(0, max(seconds, default=1.0) * 1.15)  # room for the last bar's label
    ax.invert_yaxis()
    ax.set_xlabel("time to target on cpu-1 (s, MLPerf run_start to run_stop)")
    ax.set_title("Default recipes: time to target on built-in data")
    ax.grid(True, axis="x", alpha=0.3)
    return _save(fig, path)


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, bbox_inches="tight")  # long labels and titles stay inside the image
    plt.close(fig)
    return path
