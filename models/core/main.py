"""The command line every model shares: `python -m models.<family>` calls `main()`."""

from __future__ import annotations

import atexit
import os
import signal
import sys
from pathlib import Path

import tensorflow as tf
import tf_keras
from absl import flags, logging

from models.core import checkpoint as ckpt
from models.core import gin_config, registry
from models.core.cluster import is_chief, write_tf_config
from models.core.errors import UsageError, first_line, run_app, stop_on_signals
from models.core.experiment import TRAINING_MODES, Experiment, RunOptions
from models.core.flags import define_flags
from models.core.model_dir import prepare_model_dir
from models.core.ports import check_reachable, split_address
from models.core.precision import set_precision
from models.core.predict import check_paths
from models.core.recipe import RunSpec
from models.core.run_lock import model_dir_lock
from models.core.settings import TrainSettings
from models.core.strategy import build_strategy, check_slice_matches
from models.core.task import Task

FLAGS = flags.FLAGS


def _recipe_name(gin_files: list[str]) -> str:
    return "+".join(Path(f).stem for f in gin_files) or "default"


def _cluster_from_flags() -> None:
    """--worker_hosts/--task_index, when given, become this process's TF_CONFIG."""
    if FLAGS.worker_hosts is None and FLAGS.task_index is None:
        return
    if not FLAGS.worker_hosts or FLAGS.task_index is None:
        raise UsageError("--worker_hosts and --task_index go together")
    if not 0 <= FLAGS.task_index < len(FLAGS.worker_hosts):
        raise UsageError(
            f"--task_index={FLAGS.task_index} is not in --worker_hosts "
            f"({len(FLAGS.worker_hosts)} hosts)"
        )
    write_tf_config(FLAGS.worker_hosts, FLAGS.task_index)


def _data_service_address(address: str | None) -> str | None:
    """grpc://HOST:PORT (or HOST:PORT) of a tf.data service dispatcher, checked for form and
    reachability (TensorFlow's client would otherwise retry an absent dispatcher forever)."""
    if address is None:
        return None
    owner = f"--tf_data_service={address}"
    host, port = split_address(address, owner)
    check_reachable(host, port, owner)
    return f"grpc://{host}:{port}"


def _settings(task: Task) -> TrainSettings:
    """The recipe's train settings, with --steps/--epochs (replacing the recipe's length,
    however it is spelled) and --target_metric/--target_value applied."""
    settings = TrainSettings()
    if FLAGS.steps is not None and FLAGS.epochs is not None:
        raise UsageError("--steps and --epochs both set: give one of them")
    if FLAGS.steps is not None or FLAGS.epochs is not None:
        settings.steps, settings.epochs, settings.examples = FLAGS.steps, FLAGS.epochs, None
    if settings.epochs is not None and settings.epochs <= 0:
        raise UsageError(f"--epochs={settings.epochs:g}: train for more than 0 epochs")
    if FLAGS.target_metric is not None:
        settings.target_metric = FLAGS.target_metric
    if FLAGS.target_value is not None:
        settings.target_value = FLAGS.target_value
    if settings.target_value is not None and settings.target_metric is None:
        settings.target_metric = task.primary_metric
    return settings


def run_from_flags(family: str) -> tuple[Task, dict]:
    """Flags -> gin -> strategy -> the recipe's task and model -> Experiment.run(): the task
    and its results."""
    if not FLAGS.model_dir:
        raise UsageError("--model_dir is required")
    if FLAGS.data_dir is not None and not FLAGS.data_dir.strip():
        raise UsageError("--data_dir is empty")
    if FLAGS.mode == "predict":
        check_paths(FLAGS.image, FLAGS.output, FLAGS.input, FLAGS.num_images, FLAGS.audio)
    files = FLAGS.gin_file or [f"{family}/default.gin"]
    bindings = FLAGS.gin_param + FLAGS.gin_bindings
    gin_config.parse(files, bindings, family=family, slice_name=FLAGS.slice)
    spec = RunSpec().check()
    entry = registry.model_entry(spec.model)
    if entry.family != family:
        recipe = " ".join(FLAGS.gin_file) or "the bindings"
        raise UsageError(
            f"{recipe} trains {spec.model}, a {entry.family} model: run it with "
            f"python -m models.{entry.family}"
        )
    _cluster_from_flags()
    strategy = build_strategy(FLAGS.tpu, FLAGS.strategy, FLAGS.slice, FLAGS.cluster_timeout_s)
    check_slice_matches(FLAGS.slice, strategy)
    set_precision(FLAGS.precision)
    tf_keras.utils.set_random_seed(FLAGS.seed)
    task = spec.task(model=spec.model, data_dir=FLAGS.data_dir, seed=FLAGS.seed)
    settings = _settings(task)
    prepare_model_dir(FLAGS.model_dir)
    options = RunOptions(
        model_dir=FLAGS.model_dir,
        mode=FLAGS.mode,
        model_name=spec.model,
        family=entry.family,
        recipe=FLAGS.recipe or _recipe_name(files),
        slice_name=FLAGS.slice or f"{strategy.num_replicas_in_sync}-replica",
        precision=FLAGS.precision,
        seed=FLAGS.seed,
        profile_steps=FLAGS.profile_steps,
        tf_data_service=_data_service_address(FLAGS.tf_data_service),
        tf_data_service_timeout_s=FLAGS.tf_data_service_timeout_s,
        image=FLAGS.image,
        text=FLAGS.input,
        num_images=FLAGS.num_images,
        audio=FLAGS.audio,
        output=FLAGS.output,
    )
    training = FLAGS.mode in TRAINING_MODES and is_chief(strategy)
    with model_dir_lock(FLAGS.model_dir, enabled=training):
        return task, Experiment(task, strategy, settings, options).run()


def _report(task: Task, results: dict) -> None:
    """The run's final line(s): metrics, and time-to-accuracy when a target was reached."""
    if not results:
        print("done.", flush=True)
        return
    shown = ", ".join(
        f"{k}={task.metric_text(k, v, '.4g')}" if isinstance(v, float) else f"{k}={v}"
        for k, v in results.items()
    )
    print(f"done: {shown}", flush=True)
    if "time_to_accuracy_s" in results:
        where = f"epoch {results['epoch']:g}" if "epoch" in results else f"step {results['step']}"
        print(
            f"time to accuracy: {results['time_to_accuracy_s']:.1f} s (reached at {where})",
            flush=True,
        )


def main(family: str) -> None:
    """`python -m models.<family>`: trains the recipe given (default: configs/<family>/
    default.gin). Bad input -> one line and exit 2; SIGTERM -> checkpoint, then exit 143."""
    define_flags()
    logging.set_verbosity(logging.WARNING)
    stop_on_signals()

    def _main(argv):
        if len(argv) > 1:
            raise UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
        try:
            _report(*run_from_flags(family))
        except ckpt.Preempted as stop:
            name = signal.Signals(stop.signum).name
            saved = f"checkpoint saved at step {stop.step}" if stop.step else "nothing was saved"
            print(f"{name}: {saved}; rerun to resume", flush=True)
            sys.exit(128 + stop.signum)
        except ckpt.TrainingAborted as error:
            print(f"error: {error}", file=sys.stderr, flush=True)
            sys.exit(1)
        except (tf.errors.UnavailableError, tf.errors.AbortedError) as error:
            print(
                f"error: a worker of the cluster failed or is unreachable: {first_line(error)}",
                file=sys.stderr,
                flush=True,
            )
            sys.exit(1)

    try:
        run_app(_main)
    except SystemExit as done:
        _exit_without_teardown(done.code)


def _exit_without_teardown(code: int | str | None) -> None:
    """Ends the process once its output is flushed and its atexit handlers have run, skipping
    the interpreter's teardown: there, destroying the training input's tf.data iterator waits
    out its autotuner's current period (4-8 s after a one-minute run, up to a minute after a
    long one) with everything already saved."""
    if isinstance(code, str):
        print(code, file=sys.stderr)
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    atexit._run_exitfuncs()
    os._exit(code or 0)
