"""Test-wide setup: 4 logical CPUs (for simulated slices) and an isolated dataset cache."""

import os
import tempfile

import pytest
from zoo_testing import REPO

# The tests check that steps compile with XLA, not how fast the code runs: LLVM's lowest
# optimisation level halves an XLA compile on CPU (EfficientNet's default: 118 s to 62 s).
os.environ.setdefault("XLA_FLAGS", "--xla_backend_optimization_level=0")

import models  # noqa: E402, F401 - TensorFlow's environment (log level, Keras), as the CLIs set it

os.environ.setdefault("ZOO_CACHE_DIR", tempfile.mkdtemp(prefix="zoo-cache-"))

import tensorflow as tf  # noqa: E402

_CPU = tf.config.list_physical_devices("CPU")[0]
if tf.config.get_logical_device_configuration(_CPU) is None:
    tf.config.set_logical_device_configuration(
        _CPU, [tf.config.LogicalDeviceConfiguration() for _ in range(4)]
    )
# `pytest -n N` on N cores: each worker's in-process tests get one core's worth of kernel
# threads. Eager tests are latency-bound; two threads per worker made them wait for wake-ups
# under the other worker's load (80 in-process tests, -n 2: 357 s against 258 s, 2026-12-03).
# Subprocesses (the CLI runs) keep TensorFlow's defaults.
if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
    tf.config.threading.set_intra_op_parallelism_threads(1)


def _iterated_without_autotuning(self):
    """What every iterator of this process iterates (tf.data calls this wherever it makes one:
    Dataset.__iter__, distributed and multi-device iterators, tf.data service): the dataset with
    autotuning off, whatever options the pipeline set. TensorFlow 2.20 destroys an autotuned
    iterator by joining its tuning thread (Model::OptimizeLoop), which waits out its
    optimisation period (up to 60 s) instead of waking: in a long-lived test process, dropped
    iterators stalled whichever later test the garbage collector ran in, with the CPU idle (a 1 s
    test took 60-155 s; gdb showed the main thread in RootDataset::Iterator::~Iterator).
    In-process tests do not measure speed; the CLI runs in subprocesses keep autotuning."""
    options = tf.data.Options()
    options.autotune.enabled = False
    return _apply_debug_options(self).with_options(options)


_apply_debug_options = tf.data.Dataset._apply_debug_options
tf.data.Dataset._apply_debug_options = _iterated_without_autotuning


def pytest_configure(config) -> None:
    """Registers the suite-time tables (tests/suite_time.py)."""
    from suite_time import SuiteTimes

    from models.core import registry

    names = set(registry.list_models())
    families = {registry.model_entry(name).family for name in names}

    def family_of_name(name: str) -> str | None:
        return registry.model_entry(name).family if name in names else None

    config.pluginmanager.register(SuiteTimes(families, family_of_name), "suite_time")


def pytest_collection_modifyitems(items: list) -> None:
    """Longest first, so that no worker of `pytest -n 2` is left running one long test at the
    end: the memorisation checks, then slow tests, then the rest (each group in collection
    order). The Makefile's `--dist loadgroup` hands out one test at a time (each its own group),
    except tests that share an xdist_group, which run on one worker."""

    def weight(item) -> int:
        marks = ("memorise", "slow")
        return next((i for i, mark in enumerate(marks) if item.get_closest_marker(mark)), 2)

    items.sort(key=weight)


@pytest.fixture(autouse=True)
def _fresh_gin():
    """Each test starts and ends with an empty gin configuration and float32 Keras policy."""
    import gin
    import tf_keras

    gin.clear_config()
    tf_keras.mixed_precision.set_global_policy("float32")
    yield
    gin.clear_config()


@pytest.fixture(scope="session")
def digits_dir() -> str:
    """The built-in digits TFRecords, prepared once per session in the test cache."""
    from models.data import builtin

    return builtin.prepare("digits")


@pytest.fixture(scope="session")
def digit_scenes_dir() -> str:
    """The built-in digit scenes (COCO schema), prepared once per session in the test cache."""
    from models.data import builtin

    return builtin.prepare("digit_scenes")


@pytest.fixture(scope="session")
def digit_scenes_voc_dir() -> str:
    """The built-in digit scenes' class masks (VOC schema), prepared once per session."""
    from models.data import builtin

    return builtin.prepare("digit_scenes_voc")


@pytest.fixture()
def cli_env() -> dict[str, str]:
    """Environment for running `python -m models.*` in a subprocess."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


@pytest.fixture()
def eagerly():
    """tf.functions run eagerly: one step of a model without tracing it (a tiny-input step
    takes ~1 s eagerly against 3-60 s traced)."""
    import tensorflow as tf

    tf.config.run_functions_eagerly(True)
    yield
    tf.config.run_functions_eagerly(False)
