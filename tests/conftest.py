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


def pytest_collection_modifyitems(items: list) -> None:
    """Longest first, so that no worker of `pytest -n 2` is left running one long test at the
    end: the `longest` runs, other train-to-target runs, slow tests, then the rest (each group
    in collection order). The Makefile's `--dist loadgroup` hands out one test at a time (each
    its own group), except the `longest`, which share one xdist_group and so one worker;
    xdist's default `load` sends each worker a quarter of its share at once."""

    def weight(item) -> int:
        marks = ("longest", "target", "slow")
        return next((i for i, mark in enumerate(marks) if item.get_closest_marker(mark)), 3)

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
