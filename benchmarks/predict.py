"""Predicts minutes to train a model to its MLPerf target on TPU v3 slices, by plain arithmetic.

python -m benchmarks.predict --model=resnet50 --slices=v3-8,v3-32 [--fit=v3-32 | --efficiency=X]
The model is transparent on purpose: every constant is named here and printed under "assumptions".
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from absl import flags

from benchmarks.output import format_number, run_cli
from benchmarks.published import Published, published_results
from models.core.errors import UsageError, nearest
from models.core.paths import CONFIGS_DIR
from models.core.strategy import parse_slice

SLICES_DIR = CONFIGS_DIR / "slices"

# --- TPU v3 hardware -------------------------------------------------------------------------
# shared/reference/published_results.md: "A v3 chip: 2 cores, ~123 TFLOP/s bf16 peak".
V3_CHIP_PEAK_FLOPS = 123e12
V3_CORES_PER_CHIP = 2
V3_CORE_PEAK_FLOPS = V3_CHIP_PEAK_FLOPS / V3_CORES_PER_CHIP  # 61.5 TFLOP/s
# published_results.md: a v3 Pod is 1,024 chips (2,048 cores) on a 2-D torus.
V3_MAX_CORES = 2048
# Stated assumption (not measured here): one ICI link moves ~70 GB/s in each direction.
ICI_LINK_BYTES_PER_S = 70e9
# Stated assumption: a bidirectional ring sends half the data each way, so on both links at once.
ICI_LINKS_PER_RING = 2
# Stated assumption: ~2 us per ring step (link hop plus synchronisation).
ICI_HOP_LATENCY_S = 2e-6

# --- MLPerf run -------------------------------------------------------------------------------
# Stated assumption: quality is evaluated every 4 epochs (MLPerf ResNet-50 eval cadence).
EVAL_EVERY_EPOCHS = 4
# Stated assumption: nothing fixed per run; MLPerf time is run_start -> run_stop, so
# initialisation and graph compilation (before run_start) are excluded.
RUN_OVERHEAD_S = 0.0

# --- ResNet-50 v1.5 on ImageNet ---------------------------------------------------------------
# He et al. 2015 (arXiv 1512.03385), table 1: 3.8e9 multiply-adds per 224x224 forward pass.
RESNET50_FORWARD_MACS = 3.8e9
FLOPS_PER_MAC = 2
# Backward pass ~ 2x forward (gradients w.r.t. activations and w.r.t. weights).
TRAIN_FLOPS_PER_FORWARD_FLOP = 3
# Trainable variables of models.create_model("resnet50", num_classes=1000), as torchvision's
# count; BN moving statistics are not gradients and are not all-reduced.
RESNET50_PARAMETERS = 25_557_032
# Variables and their gradients stay float32 under mixed_bfloat16 (bf16 is for activations).
GRADIENT_BYTES_PER_PARAMETER = 4
# ImageNet-1k (ILSVRC-2012) train and validation split sizes.
IMAGENET_TRAIN_EXAMPLES = 1_281_167
IMAGENET_EVAL_EXAMPLES = 50_000
# published_results.md, MLPerf reference convergence points: global batch -> mean epochs to 75.9%.
RESNET50_CONVERGENCE = ((1632, 35.0), (4096, 40.0), (8192, 42.0), (32768, 56.0))


@dataclass(frozen=True)
class ModelSpec:
    """What the prediction needs to know about one model and its dataset."""

    forward_flops: float  # per example
    parameters: int
    train_examples: int
    eval_examples: int
    convergence: tuple[tuple[int, float], ...]  # (global batch, epochs to target)
    published: tuple[Published, ...]  # from the official/ recipe headers

    @property
    def train_flops(self) -> float:
        return self.forward_flops * TRAIN_FLOPS_PER_FORWARD_FLOP

    @property
    def gradient_bytes(self) -> float:
        return self.parameters * GRADIENT_BYTES_PER_PARAMETER


# Another model is one more entry here.
MODELS = {
    "resnet50": ModelSpec(
        forward_flops=RESNET50_FORWARD_MACS * FLOPS_PER_MAC,
        parameters=RESNET50_PARAMETERS,
        train_examples=IMAGENET_TRAIN_EXAMPLES,
        eval_examples=IMAGENET_EVAL_EXAMPLES,
        convergence=RESNET50_CONVERGENCE,
        published=published_results("resnet50"),
    ),
}
DEFAULT_SLICES = ["v3-8", "v3-32", "v3-128", "v3-512", "v3-2048"]
DEFAULT_FIT = "v3-32"


# --- Pieces of the model ----------------------------------------------------------------------


def slice_cores(name: str) -> int:
    """Cores of a TPU v3 slice name `v3-N` (N cores, a power of two from 8 to a full Pod)."""
    try:
        kind, cores = parse_slice(name)
    except UsageError:
        kind, cores = "", 0
    v3 = kind == "tpu" and name.startswith("v3-")
    if not v3 or cores < 8 or cores > V3_MAX_CORES or cores & (cores - 1):
        raise UsageError(f"unknown slice '{name}': expected v3-N, N a power of two in 8..2048")
    return cores


def torus_shape(chips: int) -> tuple[int, int]:
    """The near-square 2-D torus grid of `chips` chips (4 -> 2x2, 128 -> 8x16, 1024 -> 32x32)."""
    x = 2 ** (int(math.log2(chips)) // 2)
    return x, chips // x


def read_global_batch(slice_name: str, slices_dir: Path = SLICES_DIR) -> int:
    """`train.global_batch_size` from the repo's slice recipe, so predictions follow the recipes."""
    path = Path(slices_dir) / f"{slice_name}.gin"
    if not path.is_file():
        known = sorted(p.stem for p in Path(slices_dir).glob("v3-*.gin"))
        raise UsageError(f"no slice recipe {path} for '{slice_name}'; known: {', '.join(known)}")
    found = re.findall(
        r"^\s*train\.global_batch_size\s*=\s*(\d+)\s*(?:#.*)?$", path.read_text(), re.M
    )
    if not found:
        raise UsageError(f"{path} sets no train.global_batch_size")
    return int(found[-1])


def epochs_to_target(global_batch: float, points: tuple[tuple[int, float], ...]) -> float:
    """Epochs to converge: piecewise-linear in log2(batch) through `points`, clamped at the ends."""
    batches, epochs = zip(*sorted(points), strict=True)
    return float(np.interp(math.log2(global_batch), np.log2(batches), epochs))


def compute_seconds(
    examples: float, flops_per_example: float, cores: int, efficiency: float
) -> float:
    """Time for `examples` on `cores` cores sustaining `efficiency` of their bf16 peak."""
    return examples * flops_per_example / (cores * V3_CORE_PEAK_FLOPS * efficiency)


def ring_allreduce_seconds(
    num_bytes: float,
    ring: int,
    link_bytes_per_s: float = ICI_LINK_BYTES_PER_S,
    links: int = ICI_LINKS_PER_RING,
    hop_latency_s: float = ICI_HOP_LATENCY_S,
) -> float:
    """Bidirectional ring all-reduce of `num_bytes` over `ring` chips: bandwidth + latency terms."""
    if ring <= 1:
        return 0.0
    bandwidth = 2 * (ring - 1) / ring * num_bytes / (link_bytes_per_s * links)
    return bandwidth + 2 * (ring - 1) * hop_latency_s


def torus_allreduce_seconds(num_bytes: float, shape: tuple[int, int]) -> float:
    """2-D all-reduce (Ying et al. 2018): ring along x on all bytes, then along y on 1/x of them."""
    x, y = shape
    return ring_allreduce_seconds(num_bytes, x) + ring_allreduce_seconds(num_bytes / x, y)


@dataclass(frozen=True)
class SlicePlan:
    """Everything about one slice that does not depend on the efficiency factor."""

    slice: str
    cores: int
    shape: tuple[int, int]
    global_batch: int
    epochs: float
    steps: float
    evals: int
    step_compute_at_peak_s: float
    step_allreduce_s: float
    eval_at_peak_s: float

    @property
    def chips(self) -> int:
        return self.cores // V3_CORES_PER_CHIP

    def seconds(self, efficiency: float) -> float:
        """run_start -> run_stop: steps x (compute + all-reduce, no overlap) + evals + overhead."""
        compute = self.steps * self.step_compute_at_peak_s + self.eval_at_peak_s
        return compute / efficiency + self.steps * self.step_allreduce_s + RUN_OVERHEAD_S


def plan_slice(spec: ModelSpec, slice_name: str, slices_dir: Path = SLICES_DIR) -> SlicePlan:
    """Works out batch, epochs, steps and per-step costs of `spec` on one slice."""
    cores = slice_cores(slice_name)
    shape = torus_shape(cores // V3_CORES_PER_CHIP)
    batch = read_global_batch(slice_name, slices_dir)
    epochs = epochs_to_target(batch, spec.convergence)
    evals = math.ceil(epochs / EVAL_EVERY_EPOCHS)
    return SlicePlan(
        slice=slice_name,
        cores=cores,
        shape=shape,
        global_batch=batch,
        epochs=epochs,
        steps=epochs * spec.train_examples / batch,
        evals=evals,
        step_compute_at_peak_s=compute_seconds(batch, spec.train_flops, cores, 1.0),
        step_allreduce_s=torus_allreduce_seconds(spec.gradient_bytes, shape),
        eval_at_peak_s=compute_seconds(evals * spec.eval_examples, spec.forward_flops, cores, 1.0),
    )


def latest_published(spec: ModelSpec, slice_name: str) -> Published | None:
    """The most recent published time for `slice_name`, or None."""
    rows = [p for p in spec.published if p.slice == slice_name]
    return max(rows, key=lambda p: tuple(int(v) for v in p.round[1:].split("."))) if rows else None


def fit_efficiency(plan: SlicePlan, minutes: float) -> float:
    """The fraction of peak that makes `plan` take exactly `minutes` (time is linear in 1/eff)."""
    fixed = plan.steps * plan.step_allreduce_s + RUN_OVERHEAD_S
    compute = plan.steps * plan.step_compute_at_peak_s + plan.eval_at_peak_s
    if minutes * 60 <= fixed:
        raise UsageError(f"cannot fit {plan.slice}: {minutes} min is less than its communication")
    return compute / (minutes * 60 - fixed)


# --- The command ------------------------------------------------------------------------------


def _row(spec: ModelSpec, plan: SlicePlan, efficiency: float, fitted: bool) -> dict:
    compute_ms = plan.step_compute_at_peak_s / efficiency * 1e3
    allreduce_ms = plan.step_allreduce_s * 1e3
    predicted = plan.seconds(efficiency) / 60
    pub = latest_published(spec, plan.slice)
    return {
        "slice": plan.slice,
        "cores": plan.cores,
        "chips": plan.chips,
        "torus": f"{plan.shape[0]}x{plan.shape[1]}",
        "global_batch": plan.global_batch,
        "epochs": plan.epochs,
        "steps": plan.steps,
        "evals": plan.evals,
        "step_compute_ms": compute_ms,
        "step_allreduce_ms": allreduce_ms,
        "step_ms": compute_ms + allreduce_ms,
        "predicted_minutes": predicted,
        "published_minutes": pub.minutes if pub else None,
        "published_round": pub.round if pub else None,
        "published_global_batch": pub.global_batch if pub else None,
        "published_target": pub.target if pub else None,
        "error_pct": (predicted / pub.minutes - 1) * 100 if pub else None,
        "fitted": fitted,
    }


def _choose_efficiency(
    spec: ModelSpec, fit: str, efficiency: float | None, slices_dir: Path
) -> tuple[float, dict | None]:
    """--efficiency as given, or the one that reproduces the published time on slice `fit`."""
    if efficiency is not None:
        if not 0 < efficiency <= 1:
            raise UsageError(f"--efficiency must be in (0, 1], got {efficiency}")
        return efficiency, None
    pub = latest_published(spec, fit)
    if pub is None:
        known = sorted({p.slice for p in spec.published})
        raise UsageError(
            f"--fit={fit}: no published time for that slice; known: {', '.join(known)}"
        )
    value = fit_efficiency(plan_slice(spec, fit, slices_dir), pub.minutes)
    return value, {"slice": fit, "round": pub.round, "minutes": pub.minutes}


def predict(
    model: str,
    slices: list[str],
    fit: str = DEFAULT_FIT,
    efficiency: float | None = None,
    slices_dir: Path = SLICES_DIR,
) -> dict:
    """Predicted vs published minutes for each slice; efficiency fitted on one point at most."""
    if model not in MODELS:
        raise UsageError(
            f"unknown model '{model}'{nearest(model, MODELS)}; known: {', '.join(MODELS)}"
        )
    spec = MODELS[model]
    plans = [plan_slice(spec, s, slices_dir) for s in slices]
    eff, fitted_on = _choose_efficiency(spec, fit, efficiency, slices_dir)
    fitted_slice = fitted_on["slice"] if fitted_on else None
    rows = [_row(spec, p, eff, p.slice == fitted_slice) for p in plans]
    errors = [abs(r["error_pct"]) for r in rows if r["error_pct"] is not None and not r["fitted"]]
    return {
        "model": model,
        "efficiency": eff,
        "fitted_on": fitted_on,
        "rows": rows,
        "mean_abs_error_pct": sum(errors) / len(errors) if errors else None,
        "predicted_points": len(errors),
        "assumptions": assumptions(model),
    }


def assumptions(model: str) -> list[str]:
    """Every constant of the model, with its source, as lines a reader can check."""
    spec = MODELS[model]
    points = ", ".join(f"{b} -> {e:g}" for b, e in spec.convergence)
    return [
        f"v3 chip peak {V3_CHIP_PEAK_FLOPS / 1e12:g} TFLOP/s bf16, {V3_CORES_PER_CHIP} cores "
        f"-> {V3_CORE_PEAK_FLOPS / 1e12:g} TFLOP/s per core; v3-N = N cores = N/2 chips "
        "(published_results.md)",
        "chips on a near-square 2-D torus: 4 = 2x2, 16 = 4x4, 64 = 8x8, 256 = 16x16, "
        "1024 = 32x32 (published_results.md: Pod = 1,024 chips, 2-D torus)",
        f"ICI link {ICI_LINK_BYTES_PER_S / 1e9:g} GB/s per direction, {ICI_LINKS_PER_RING} links "
        f"per bidirectional ring, {ICI_HOP_LATENCY_S * 1e6:g} us per ring step "
        "(stated assumptions)",
        "gradient all-reduce: 2-D (Ying et al. 2018, arXiv 1811.06992): ring along x on all bytes, "
        "then along y on 1/x of them; each ring 2(p-1)/p x bytes / (link x links) + 2(p-1) steps "
        "x latency; the 2 cores of a chip reduce on-chip for free (assumption)",
        "no overlap: step time = compute + all-reduce (assumption; XLA can overlap some of it)",
        f"forward {spec.forward_flops / 1e9:g} GFLOP/example (ResNet-50: {RESNET50_FORWARD_MACS:g} "
        f"multiply-adds x {FLOPS_PER_MAC}, He et al. 2015 table 1); training x"
        f"{TRAIN_FLOPS_PER_FORWARD_FLOP} = {spec.train_flops / 1e9:g} GFLOP/example",
        f"gradients {spec.parameters:,} parameters x {GRADIENT_BYTES_PER_PARAMETER} bytes (float32 "
        f"variables under mixed_bfloat16) = {spec.gradient_bytes / 1e6:.1f} MB per step",
        f"{spec.train_examples:,} train / {spec.eval_examples:,} eval examples (ImageNet-1k)",
        f"epochs to target by global batch: {points} (MLPerf reference points, "
        "published_results.md), piecewise-linear in log2(batch), clamped at the ends",
        "global batch per slice: train.global_batch_size in configs/slices/<slice>.gin",
        "steps = epochs x examples / batch (fractional); one eval every "
        f"{EVAL_EVERY_EPOCHS} epochs (forward FLOPs only, same efficiency; stated assumption)",
        f"fixed per-run overhead {RUN_OVERHEAD_S:g} s: MLPerf time is run_start -> run_stop, "
        "init and compile excluded (assumption)",
        "efficiency (fraction of peak sustained by training and eval) lumps everything else: "
        "input pipeline, host overheads, non-matmul ops, padding",
    ]


def _published_cell(row: dict) -> str:
    if row["published_minutes"] is None:
        return "-"
    notes = [row["published_round"]]
    if row["published_global_batch"] != row["global_batch"]:
        notes.append(f"batch {row['published_global_batch']}")
    return f"{row['published_minutes']:.2f} ({', '.join(notes)})"


def _error_cell(row: dict) -> str:
    if row["error_pct"] is None:
        return "-"
    error = round(row["error_pct"], 1) + 0.0  # no "-0.0" for the fitted point
    return f"{error:+.1f}" + (" (fitted)" if row["fitted"] else "")


def _table(rows: list[dict]) -> list[str]:
    lines = [
        "| slice | chips | global batch | epochs | step ms (compute + all-reduce) "
        "| predicted min | published min (round) | error % |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        step = f"{r['step_ms']:.1f} ({r['step_compute_ms']:.1f} + {r['step_allreduce_ms']:.2f})"
        lines.append(
            f"| {r['slice']} | {r['chips']} ({r['torus']}) | {r['global_batch']} "
            f"| {r['epochs']:.1f} | {step} | {r['predicted_minutes']:.2f} "
            f"| {_published_cell(r)} | {_error_cell(r)} |"
        )
    return lines


def _summary(result: dict) -> list[str]:
    fit = result["fitted_on"]
    how = (
        f"fitted on {fit['slice']} {fit['round']} = {fit['minutes']} min (the only fitted point)"
        if fit
        else "given by --efficiency (nothing fitted)"
    )
    targets = sorted(
        {
            f"{r['published_round']}: {r['published_target']}"
            for r in result["rows"]
            if r["published_target"]
        }
    )
    return [
        f"Efficiency {result['efficiency']:.4f} of bf16 peak, {how}.",
        f"Mean absolute error over {result['predicted_points']} predicted points: "
        f"{format_number(result['mean_abs_error_pct'], '.1f')}%.",
    ] + ([f"Published targets by round: {'; '.join(targets)}."] if targets else [])


def render(result: dict) -> str:
    """The markdown table, the fit, the mean error and the assumptions."""
    title = f"## {result['model']}: predicted vs published minutes to the MLPerf target"
    listed = [f"- {a}" for a in result["assumptions"]]
    return "\n".join(
        [title, ""]
        + _table(result["rows"])
        + [""]
        + _summary(result)
        + ["", "Assumptions:"]
        + listed
    )


FLAGS = flags.FLAGS


def define_flags() -> None:
    """--model, --slices, --fit, --efficiency, --json (idempotent)."""
    if "slices" in FLAGS:
        return
    flags.DEFINE_string("model", "resnet50", f"Model to predict: {', '.join(MODELS)}.")
    flags.DEFINE_list("slices", DEFAULT_SLICES, "TPU v3 slices (need configs/slices/<slice>.gin).")
    flags.DEFINE_string(
        "fit", DEFAULT_FIT, "Slice whose latest published time sets the efficiency."
    )
    flags.DEFINE_float("efficiency", None, "Fraction of bf16 peak sustained; skips the fit.")


def main() -> None:
    """Entry point: bad input -> one line `error: ...` on stderr and exit code 2."""
    define_flags()
    run_cli(
        "predict", lambda _: predict(FLAGS.model, FLAGS.slices, FLAGS.fit, FLAGS.efficiency), render
    )


if __name__ == "__main__":
    main()
