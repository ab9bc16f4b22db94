"""Training throughput and MFU of a recipe against Model Garden's own trainer, same machine.

python -m benchmarks.throughput --model=resnet --recipe=resnet50_imagenet --batch=32 \
    --precision=bfloat16 [--steps=N --warmup_steps=M] [--input_only] [--data_dir=DIR] [--json]
"""

from __future__ import annotations

# isort: off
import models  # noqa: F401 - first: it quiets TensorFlow's C++ logs before TensorFlow loads

# isort: on
import tensorflow as tf
from absl import flags, logging

from benchmarks import output
from benchmarks import throughput_measure as measure
from benchmarks.throughput_ours import Recipe, configure, measure_ours
from models.core.errors import UsageError
from models.core.precision import POLICIES
from models.core.records import describe_accelerator
from models.core.strategy import build_strategy

FLAGS = flags.FLAGS


def define_flags() -> None:
    """This command's flags, plus the shared --json."""
    flags.DEFINE_string("model", "resnet", "Model family, e.g. resnet.")
    flags.DEFINE_string("recipe", "resnet50_imagenet", "Recipe: configs/<model>/<recipe>.gin.")
    flags.DEFINE_integer("batch", 32, "Global batch size.")
    flags.DEFINE_enum("precision", "bfloat16", sorted(POLICIES), "Compute precision.")
    flags.DEFINE_integer("steps", 20, "Measured steps (or batches with --input_only).")
    flags.DEFINE_integer("warmup_steps", 3, "Steps run before measuring (tracing, compiling).")
    flags.DEFINE_boolean("input_only", False, "Time the input pipelines alone (images/s).")
    flags.DEFINE_string("data_dir", None, "TFRecords for --input_only; default: built-in digits.")
    flags.DEFINE_multi_string("gin_param", [], "Extra gin binding (repeatable), e.g. to shrink.")
    flags.DEFINE_integer("peak_size", 4096, "Side of the square matmul that measures peak.")


def _check_counts() -> None:
    """UsageError unless the step counts make sense."""
    if FLAGS.steps < 1 or FLAGS.warmup_steps < 0:
        raise UsageError("--steps must be at least 1 and --warmup_steps at least 0")
    if FLAGS.data_dir is not None and not FLAGS.input_only:
        raise UsageError("--data_dir is read only with --input_only (training uses synthetic data)")


def _header(recipe: Recipe, strategy: tf.distribute.Strategy) -> dict:
    """The run's settings, shared by both modes."""
    return {
        "model": recipe.model,
        "recipe": recipe.recipe,
        "global_batch_size": recipe.batch,
        "precision": recipe.precision,
        "device": describe_accelerator(strategy),
        "replicas": strategy.num_replicas_in_sync,
        "warmup_steps": FLAGS.warmup_steps,
        "steps": FLAGS.steps,
        "gin_params": list(FLAGS.gin_param),
    }


def _mfu(side: dict, peak: float) -> None:
    """Adds model FLOPs utilisation: examples/s x FLOPs/example / peak FLOP/s."""
    side["mfu"] = side["examples_per_s"] * side["flops_per_example"] / peak


def _peak(recipe: Recipe, when: str) -> dict:
    """One matmul-peak measurement, announced on stderr."""
    output.progress(f"measuring the {recipe.precision} matmul peak ({when} training) ...")
    return measure.matmul_peak(recipe.precision, FLAGS.peak_size)


def run_training(recipe: Recipe, strategy: tf.distribute.Strategy) -> dict:
    """Ours and the anchor on synthetic data, the device's matmul peak, MFU and the ratio."""
    from benchmarks.throughput_anchor import measure_anchor  # Model Garden's task registry

    warmup, steps = FLAGS.warmup_steps, FLAGS.steps
    peaks = [_peak(recipe, "before")]
    output.progress(f"ours: {recipe.recipe}, {warmup} warm-up + {steps} measured steps ...")
    ours = measure_ours(recipe, strategy, warmup, steps)
    output.progress("anchor: Model Garden resnet_imagenet, same steps ...")
    anchor = measure_anchor(ours["config"], recipe.batch, recipe.precision, strategy, warmup, steps)
    peaks.append(_peak(recipe, "after"))
    peak = max(peaks, key=lambda p: p["flops_per_s"])
    for side in (ours, anchor):
        _mfu(side, peak["flops_per_s"])
    return {
        **_header(recipe, strategy),
        "mode": "training",
        "input": "synthetic: one random batch of the recipe's image size and classes, repeated",
        "flops_method": measure.FLOPS_METHOD,
        "peak_flops_per_s": peak["flops_per_s"],
        "peak_method": f"{peak['method']}; the higher of a run before and one after training",
        "peak_samples_flops_per_s": [p["flops_per_s"] for p in peaks],
        "ours": ours,
        "anchor": anchor,
        "ratio_ours_to_anchor": ours["examples_per_s"] / anchor["examples_per_s"],
        "params_match": ours["params"] == anchor["params"],
    }


def run_input_only(recipe: Recipe, strategy: tf.distribute.Strategy) -> dict:
    """Both input pipelines alone on the same TFRecords (default: built-in digits)."""
    from benchmarks.throughput_input import measure_inputs
    from models.data import builtin
    from models.data.classification import ClassificationInput

    pipeline = ClassificationInput(data_dir=FLAGS.data_dir or builtin.prepare("digits"))
    pipeline.files("train")  # a missing or empty --data_dir fails here, in one line
    output.progress(f"input only: {FLAGS.warmup_steps} warm-up + {FLAGS.steps} batches each ...")
    figures = measure_inputs(pipeline, recipe.batch, FLAGS.warmup_steps, FLAGS.steps)
    return {**_header(recipe, strategy), "mode": "input_only", **figures}


def _fmt(value: float) -> str:
    return f"{value:,.3g}" if abs(value) < 100 else f"{value:,.0f}"


def render_training(result: dict) -> str:
    """Markdown table: ours vs anchor, then peak, ratio and methods."""
    rows = [
        "| | examples/s | ms/step | FLOPs/example | MFU | params | XLA |",
        "|---|---|---|---|---|---|---|",
    ]
    for key in ("ours", "anchor"):
        side = result[key]
        rows.append(
            f"| {side['name']} | {_fmt(side['examples_per_s'])} | {_fmt(side['ms_per_step'])} "
            f"| {side['flops_per_example'] / 1e9:.2f} G | {side['mfu']:.1%} "
            f"| {side['params']:,} | {'on' if side['xla'] else 'off'} |"
        )
    return "\n".join(_preamble(result) + rows + _training_footer(result))


def _preamble(result: dict) -> list[str]:
    """The line above the table: what ran, where, how long."""
    training = result["mode"] == "training"
    what = f"{result['precision']}, " if training else "input pipelines only, "
    unit = "steps" if training else "batches"
    return [
        f"{result['model']} / {result['recipe']}, global batch {result['global_batch_size']}, "
        f"{what}{result['device']}, {result['warmup_steps']} warm-up + "
        f"{result['steps']} measured {unit}",
        "",
    ]


def _xla_note(ours: dict, anchor: dict) -> list[str]:
    """A line when the two sides do not use the same compiler."""
    if ours["xla"] == anchor["xla"]:
        return []
    on = {True: "on", False: "off"}
    return [
        f"note: XLA differs (ours {on[ours['xla']]}, anchor {on[anchor['xla']]}); "
        f"--gin_param='train.jit_compile = {anchor['xla']}' compares the same compiler"
    ]


def _training_footer(result: dict) -> list[str]:
    ours, anchor = result["ours"], result["anchor"]
    match = "match" if result["params_match"] else "DIFFER"
    return [
        "",
        f"device peak: {result['peak_flops_per_s'] / 1e9:,.1f} GFLOP/s ({result['peak_method']})",
        f"ratio ours / anchor (examples/s): {result['ratio_ours_to_anchor']:.3f}",
        f"parameter counts {match}: {ours['params']:,} vs {anchor['params']:,}",
        f"FLOPs: {result['flops_method']}",
        f"input: {result['input']}",
        *_xla_note(ours, anchor),
    ]


def render_input(result: dict) -> str:
    """Markdown table of both pipelines' images/s, then the ratio."""
    rows = ["| | images/s | ms/batch |", "|---|---|---|"]
    for key in ("ours", "anchor"):
        side = result[key]
        rows.append(
            f"| {side['name']} | {_fmt(side['images_per_s'])} | {_fmt(side['ms_per_batch'])} |"
        )
    footer = [
        "",
        f"records: {result['data_dir']} ({result['train_files']} train files), "
        f"decode + random resized crop + flip to {result['image_size']}x{result['image_size']} "
        f"{result['image_dtype']}",
        f"ratio ours / anchor (images/s): {result['ratio_ours_to_anchor']:.3f}",
    ]
    return "\n".join(_preamble(result) + rows + footer)


def render(result: dict) -> str:
    return render_input(result) if result["mode"] == "input_only" else render_training(result)


def run() -> dict:
    """Flags -> recipe -> one measurement (training or input only)."""
    _check_counts()
    recipe = Recipe(FLAGS.model, FLAGS.recipe, FLAGS.batch, FLAGS.precision)
    configure(recipe, list(FLAGS.gin_param))
    strategy = build_strategy()
    if FLAGS.input_only:
        return run_input_only(recipe, strategy)
    return run_training(recipe, strategy)


def main() -> None:
    """Entry point: bad input -> one `error: ...` line on stderr and exit code 2."""
    define_flags()
    logging.set_verbosity(logging.ERROR)
    tf.get_logger().setLevel("ERROR")
    output.run_cli("throughput", lambda _: run(), render)


if __name__ == "__main__":
    main()
