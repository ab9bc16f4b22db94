"""Strategy selection from --slice / --tpu; bad device input fails fast with one clear error."""

import time

import gin
import pytest

from models.core import gin_config
from models.core.errors import UsageError
from models.core.strategy import (
    build_strategy,
    check_jit_compile,
    check_slice_matches,
    parse_slice,
)


def test_parse_slice_names():
    assert parse_slice("cpu-4") == ("cpu", 4)
    assert parse_slice("gpu-2") == ("gpu", 2)
    assert parse_slice("v3-32") == ("tpu", 32)


@pytest.mark.parametrize("bad", ["cpu-0", "cpu", "tpu-8", "v3-0", "cpu--1"])
def test_bad_slice_is_a_usage_error(bad):
    with pytest.raises(UsageError, match="--slice"):
        parse_slice(bad)


def test_cpu_slice_has_that_many_replicas():
    assert build_strategy(slice_name="cpu-4").num_replicas_in_sync == 4
    assert build_strategy(slice_name="cpu-2").num_replicas_in_sync == 2


def test_tpu_slice_needs_tpu_flag():
    with pytest.raises(UsageError, match="--tpu"):
        build_strategy(slice_name="v3-8")


@pytest.mark.parametrize("tpu", ["my-tpu", "local", "grpc://127.0.0.1:1"])
def test_unreachable_tpu_fails_fast(tpu):
    start = time.monotonic()
    with pytest.raises(UsageError, match="TPU"):
        build_strategy(tpu=tpu)
    assert time.monotonic() - start < 30


def test_slice_name_must_match_replicas():
    with pytest.raises(UsageError, match="expects 32 cores"):
        check_slice_matches("v3-32", build_strategy(slice_name="cpu-4"))


def test_slice_cores_are_replicas_times_cores_per_replica():
    # Model parallelism: 4 replicas of 8 cores fill a v3-32, though replicas != cores.
    four = build_strategy(slice_name="cpu-4")
    gin_config.parse([], ["tpu.cores_per_replica = 8"])
    try:
        check_slice_matches("v3-32", four)
        with pytest.raises(UsageError, match=r"the TPU has 32 \(4 replicas x 8 core"):
            check_slice_matches("v3-8", four)
    finally:
        gin.clear_config()


def test_multi_worker_needs_tf_config(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", "{not json")
    with pytest.raises(UsageError, match="TF_CONFIG"):
        build_strategy(strategy="multi_worker")


def test_xla_needs_one_cpu_per_process():
    # XLA would run both logical CPUs on CPU:0 and fail inside the first step.
    with pytest.raises(UsageError, match="jit_compile"):
        check_jit_compile(True, build_strategy(slice_name="cpu-2"))
    check_jit_compile(False, build_strategy(slice_name="cpu-2"))
    check_jit_compile(True, build_strategy(slice_name="cpu-1"))
