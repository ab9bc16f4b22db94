"""benchmarks.throughput at tiny sizes: counters, peak, both trainers, both pipelines, the CLI."""

from __future__ import annotations

import json
import subprocess

import gin
import pytest
import tensorflow as tf
import tf_keras
from zoo_testing import PYTHON

from benchmarks import throughput_measure as measure
from benchmarks.throughput_anchor import measure_anchor
from benchmarks.throughput_input import measure_inputs
from benchmarks.throughput_ours import Recipe, check, configure, measure_ours
from models.core.errors import UsageError
from models.core.strategy import build_strategy
from models.data.classification import ClassificationInput

# The ResNet-50 recipe shrunk to ResNet-18 at width 0.25 on 32x32 inputs, no XLA (CPU time).
TINY = [
    "resnet.depth = 18",
    "resnet.width_multiplier = 0.25",
    "classification_input.image_size = 32",
    "train.jit_compile = False",
]
TINY_FLAGS = [f"--gin_param={binding}" for binding in TINY]


@pytest.fixture(autouse=True)
def _clean_state():
    gin.clear_config()
    yield
    gin.clear_config()
    tf_keras.mixed_precision.set_global_policy("float32")


def _command(*args: str) -> list[str]:
    return [PYTHON, "-m", "benchmarks.throughput", "--model=resnet", *args]


def test_forward_flops_of_one_dense_layer_is_two_in_out():
    model = tf_keras.Sequential([tf_keras.Input([7]), tf_keras.layers.Dense(5, use_bias=False)])
    assert measure.forward_flops(model, [7]) == 2 * 7 * 5
    assert measure.training_flops_per_example(model, [7]) == 3 * 2 * 7 * 5


def test_matmul_peak_is_positive():
    peak = measure.matmul_peak("float32", size=64, seconds=0.01)
    assert peak["flops_per_s"] > 0
    assert "64x64 float32" in peak["method"]


def test_ours_and_anchor_train_two_steps_and_match_in_size():
    recipe = Recipe("resnet", "resnet50_imagenet", 4, "float32")
    configure(recipe, TINY)
    strategy = build_strategy()
    ours = measure_ours(recipe, strategy, warmup_steps=1, steps=2)
    anchor = measure_anchor(ours["config"], 4, "float32", strategy, warmup_steps=1, steps=2)
    assert ours["examples_per_s"] > 0 and anchor["examples_per_s"] > 0
    assert ours["params"] == anchor["params"]
    assert ours["flops_per_example"] == anchor["flops_per_example"] > 0
    assert ours["config"]["num_classes"] == 1000 and ours["config"]["image_size"] == 32


def test_input_only_on_digits_gives_images_per_second_for_both(digits_dir):
    configure(Recipe("resnet", "default", 8, "float32"), [])
    result = measure_inputs(ClassificationInput(digits_dir), batch=8, warmup=1, count=2)
    assert result["image_size"] == 32
    assert result["ours"]["images_per_s"] > 0 and result["anchor"]["images_per_s"] > 0


def test_json_prints_exactly_one_object(cli_env, digits_dir):
    args = ["--recipe=resnet50_imagenet", "--batch=4", "--precision=bfloat16", "--steps=1"]
    args += ["--warmup_steps=1", "--peak_size=64", "--json", *TINY_FLAGS]
    done = subprocess.run(_command(*args), capture_output=True, text=True, env=cli_env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 1
    result = json.loads(done.stdout)
    assert set(result) >= {"ours", "anchor", "peak_flops_per_s", "ratio_ours_to_anchor"}
    assert result["ours"]["mfu"] > 0 and result["params_match"]


def test_input_only_json(cli_env, digits_dir):
    args = ["--recipe=default", "--batch=8", "--steps=1", "--warmup_steps=1"]
    args += ["--input_only", f"--data_dir={digits_dir}", "--json"]
    done = subprocess.run(_command(*args), capture_output=True, text=True, env=cli_env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["anchor"]["images_per_s"] > 0


@pytest.mark.parametrize("args", [["--recipe=resnet51_imagenet"], ["--precision=fp8"]])
def test_bad_input_is_one_line_and_exit_2(cli_env, args):
    done = subprocess.run(_command(*args), capture_output=True, text=True, env=cli_env, timeout=120)
    assert done.returncode == 2
    assert done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1
    assert done.stderr.startswith("error: ")


@pytest.mark.parametrize(
    "recipe, message",
    [
        (Recipe("resnot", "default", 4, "float32"), "did you mean 'resnet'"),
        (Recipe("resnet", "defualt", 4, "float32"), "did you mean 'default'"),
        (Recipe("resnet", "default", 0, "float32"), "--batch must be at least 1"),
    ],
)
def test_check_rejects_unknown_names_and_empty_batches(recipe, message):
    with pytest.raises(UsageError, match=message):
        check(recipe)


def test_synthetic_examples_have_the_recipe_shape():
    images, labels = next(iter(measure.synthetic_examples(2, 8, 3, tf.bfloat16)))
    assert images.shape == (2, 8, 8, 3) and images.dtype == tf.bfloat16
    assert labels.dtype == tf.int32 and bool(tf.reduce_all(labels < 3))
