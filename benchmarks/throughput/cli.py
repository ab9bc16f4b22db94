"""The throughput command: flags -> recipe -> one measurement (training or input only)."""

from __future__ import annotations

# isort: off
import models  # noqa: F401 - first: it quiets TensorFlow's C++ logs before TensorFlow loads

# isort: on
import tensorflow as tf
from absl import flags, logging

from benchmarks import output, recipes
from benchmarks.recipes import Recipe, load_recipe
from benchmarks.throughput import anchors, measure, ours
from benchmarks.throughput.render import render
from models.core.errors import UsageError
from models.core.precision import POLICIES, set_precision
from models.core.records import describe_accelerator
from models.core.strategy import build_strategy

FLAGS = flags.FLAGS
SYNTHETIC_INPUT = "train.synthetic_input = True"


def define_flags() -> None:
    """This command's flags, plus the shared --json."""
    recipes.define_flags(default_recipe="resnet/resnet50_imagenet")
    flags.DEFINE_integer("batch", 32, "Global batch size.")
    flags.DEFINE_enum("precision", "bfloat16", sorted(POLICIES), "Compute precision.")
    flags.DEFINE_integer("steps", 20, "Measured steps (or batches with --input_only).")
    flags.DEFINE_integer("warmup_steps", 3, "Steps run before measuring (tracing, compiling).")
    flags.DEFINE_boolean("input_only", False, "Time the input pipelines alone (images/s).")
    flags.DEFINE_string("data_dir", None, "TFRecords for --input_only; default: built-in digits.")
    flags.DEFINE_multi_string("gin_param", [], "Extra gin binding (repeatable), e.g. to shrink.")
    flags.DEFINE_integer("peak_size", 4096, "Side of the square matmul that measures peak.")


def _check_flags() -> None:
    """UsageError unless the batch and step counts make sense."""
    if FLAGS.batch < 1:
        raise UsageError(f"--batch must be at least 1, got {FLAGS.batch}")
    if FLAGS.steps < 1 or FLAGS.warmup_steps < 0:
        raise UsageError("--steps must be at least 1 and --warmup_steps at least 0")
    if FLAGS.data_dir is not None and not FLAGS.input_only:
        raise UsageError("--data_dir is read only with --input_only (training uses synthetic data)")


def _header(recipe: Recipe, strategy: tf.distribute.Strategy) -> dict:
    """The run's settings, shared by both modes."""
    return {
        "family": recipe.family,
        "model": recipe.model,
        "recipe": recipe.path,
        "global_batch_size": FLAGS.batch,
        "precision": FLAGS.precision,
        "device": describe_accelerator(strategy),
        "replicas": strategy.num_replicas_in_sync,
        "warmup_steps": FLAGS.warmup_steps,
        "steps": FLAGS.steps,
        "gin_params": list(FLAGS.gin_param),
    }


def _peak(when: str) -> dict:
    """One matmul-peak measurement, announced on stderr."""
    output.progress(f"measuring the {FLAGS.precision} matmul peak ({when} training) ...")
    return measure.matmul_peak(FLAGS.precision, FLAGS.peak_size)


def _add_mfu(side: dict, peak: float) -> None:
    """Model FLOPs utilisation: examples/s x FLOPs/example / peak FLOP/s (None without FLOPs)."""
    flops = side["flops_per_example"]
    side["mfu"] = None if flops is None else side["examples_per_s"] * flops / peak


def _add_tokens(side: dict, tokens_per_batch: int | None) -> None:
    """tokens/s (padded, a side) from examples/s where the family counts tokens, else None."""
    per_example = None if tokens_per_batch is None else tokens_per_batch / FLAGS.batch
    side["tokens_per_s"] = None if per_example is None else side["examples_per_s"] * per_example


def _comparison(mine: dict, anchor: dict | None, note: str) -> dict:
    """The ratio of ours to the anchor and whether their sizes match, or why there is none."""
    if anchor is None:
        return {"anchor_note": note, "ratio_ours_to_anchor": None, "params_match": None}
    return {
        "anchor_note": None,
        "ratio_ours_to_anchor": mine["examples_per_s"] / anchor["examples_per_s"],
        "params_match": mine["params"] == anchor["params"],
    }


def run_training(recipe: Recipe, strategy: tf.distribute.Strategy) -> dict:
    """Ours (and Model Garden's matched experiment, where `anchors` has one) on synthetic
    input, the device's matmul peak, MFU and the ratio."""
    warmup, steps = FLAGS.warmup_steps, FLAGS.steps
    peaks = [_peak("before")]
    output.progress(f"ours: {recipe.path} ({recipe.model}), {warmup} warm-up + {steps} steps ...")
    trainer = ours.build_trainer(recipe, strategy)
    mine, anchor = ours.measure_ours(trainer, recipe, warmup, steps), None
    model_garden = anchors.find(recipe, trainer.task)
    if model_garden is not None:
        output.progress(f"anchor: Model Garden {model_garden.EXPERIMENT}, same steps ...")
        anchor = model_garden.measure_anchor(trainer, FLAGS.precision, strategy, warmup, steps)
    peaks.append(_peak("after"))
    peak = max(peaks, key=lambda p: p["flops_per_s"])
    tokens = ours.tokens_per_batch(recipe, trainer)
    for side in filter(None, (mine, anchor)):
        _add_mfu(side, peak["flops_per_s"])
        _add_tokens(side, tokens)
    return {
        **_header(recipe, strategy),
        "mode": "training",
        "tokens_per_batch": tokens,
        "input": f"synthetic ({SYNTHETIC_INPUT}): {ours.describe_synthetic_input(trainer.task)}",
        "flops_method": measure.FLOPS_METHOD,
        "peak_flops_per_s": peak["flops_per_s"],
        "peak_method": f"{peak['method']}; the higher of a run before and one after training",
        "peak_samples_flops_per_s": [p["flops_per_s"] for p in peaks],
        "ours": mine,
        "anchor": anchor,
        **_comparison(mine, anchor, anchors.NO_ANCHOR),
    }


def run_input_only(recipe: Recipe, strategy: tf.distribute.Strategy) -> dict:
    """Both input pipelines alone on the same TFRecords (default: built-in digits)."""
    from benchmarks.throughput import input as pipelines

    pipeline = pipelines.pipeline_of(ours.build_task(recipe, FLAGS.data_dir))
    pipeline.files("train")  # a missing or empty --data_dir fails here, in one line
    output.progress(f"input only: {FLAGS.warmup_steps} warm-up + {FLAGS.steps} batches each ...")
    figures = pipelines.measure_inputs(pipeline, FLAGS.batch, FLAGS.warmup_steps, FLAGS.steps)
    return {**_header(recipe, strategy), "mode": "input_only", **figures}


def run() -> dict:
    """Flags -> recipe (with the batch and synthetic input bound) -> one measurement."""
    _check_flags()
    bindings = (f"train.global_batch_size = {FLAGS.batch}", *FLAGS.gin_param, SYNTHETIC_INPUT)
    recipe = load_recipe(FLAGS.recipe, FLAGS.model, bindings)
    set_precision(FLAGS.precision)
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
