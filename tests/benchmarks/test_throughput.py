"""benchmarks.throughput at tiny sizes: counters, peak, both trainers, both pipelines, the CLI."""

from __future__ import annotations

import json
import subprocess

import gin
import pytest
import tf_keras
from zoo_testing import PYTHON

from benchmarks.recipes import load_recipe
from benchmarks.throughput import anchors, measure, ours
from benchmarks.throughput import input as pipelines
from benchmarks.throughput.render import render
from models.core.errors import UsageError

# The ResNet-50 recipe shrunk to ResNet-18 at width 0.25 on 32x32 inputs, no XLA (CPU time).
TINY = [
    "resnet.width_multiplier = 0.25",
    "classification_input.image_size = 32",
    "train.jit_compile = False",
]
TINY_FLAGS = ["--model=resnet18", *(f"--gin_param={binding}" for binding in TINY)]


@pytest.fixture(autouse=True)
def _clean_state():
    gin.clear_config()
    yield
    gin.clear_config()
    tf_keras.mixed_precision.set_global_policy("float32")


def _throughput(*args: str, env: dict, timeout: int = 300) -> subprocess.CompletedProcess:
    command = [PYTHON, "-m", "benchmarks.throughput", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout)


def _dense() -> tf_keras.Model:
    return tf_keras.Sequential([tf_keras.Input([7]), tf_keras.layers.Dense(5, use_bias=False)])


def test_forward_flops_of_one_dense_layer_is_two_in_out():
    model = _dense()
    assert measure.forward_flops(model, [7]) == 2 * 7 * 5
    assert measure.training_flops_per_example(model, [7]) == 3 * 2 * 7 * 5


def test_flops_per_example_only_for_one_model_with_one_input():
    assert ours.flops_per_example({"model": _dense()}, task=None) == 3 * 2 * 7 * 5
    two = {"generator": _dense(), "discriminator": _dense()}
    assert ours.flops_per_example(two, task=None) is None


def test_matmul_peak_is_positive():
    peak = measure.matmul_peak("float32", size=64, seconds=0.01)
    assert peak["flops_per_s"] > 0
    assert "64x64 float32" in peak["method"]


@pytest.mark.slow
def test_resnet_json_is_one_object_and_both_sides_match(cli_env):
    args = ["--recipe=resnet/resnet50_imagenet", "--batch=4", "--precision=bfloat16"]
    args += ["--steps=1", "--warmup_steps=1", "--peak_size=64", "--json", *TINY_FLAGS]
    done = _throughput(*args, env=cli_env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 1
    result = json.loads(done.stdout)
    assert (result["family"], result["model"]) == ("resnet", "resnet18")
    assert result["recipe"] == "resnet/resnet50_imagenet"
    mine, anchor = result["ours"], result["anchor"]
    assert mine["mfu"] > 0 and result["params_match"] and result["ratio_ours_to_anchor"] > 0
    assert mine["flops_per_example"] == anchor["flops_per_example"] > 0
    assert anchor["matched"]["num_classes"] == 1000 and anchor["matched"]["image_size"] == 32
    assert "train.synthetic_input = True" in result["input"]


@pytest.mark.slow
def test_other_family_default_recipe_runs_on_synthetic_input_without_anchor(cli_env):
    args = ["--recipe=mobilenet/default", "--batch=2", "--precision=float32", "--steps=1"]
    args += ["--warmup_steps=0", "--peak_size=64", "--json"]
    done = _throughput(*args, env=cli_env)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["family"], result["model"]) == ("mobilenet", "mobilenet_v2")
    assert result["ours"]["examples_per_s"] > 0 and result["ours"]["mfu"] > 0
    assert result["anchor"] is None and result["ratio_ours_to_anchor"] is None
    assert "ImageClassificationTask.synthetic_inputs" in result["input"]
    table = render(result)
    assert anchors.NO_ANCHOR in table and "'retinanet_resnetfpn_coco' (retinanet)" in table
    assert table.count("| this project") == 1 and "Model Garden: exp_factory" not in table


@pytest.mark.slow
def test_retinanet_default_recipe_against_model_gardens_own_task(cli_env, digit_scenes_dir):
    args = ["--recipe=retinanet/default", "--batch=2", "--precision=float32", "--steps=1"]
    args += ["--warmup_steps=1", "--peak_size=64", "--json"]
    done = _throughput(*args, env=cli_env)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["anchor"]["name"].startswith("Model Garden: exp_factory 'retinanet_resnetfpn")
    assert result["params_match"] and result["ratio_ours_to_anchor"] > 0
    matched = result["anchor"]["matched"]
    assert matched["model"]["num_classes"] == matched["num_classes"] == 6  # 5 digits + background
    assert matched["model"]["backbone"]["resnet"]["model_id"] == 18


def test_input_only_on_digits_gives_images_per_second_for_both(digits_dir):
    recipe = load_recipe("resnet/default", bindings=("train.global_batch_size = 8",))
    pipeline = pipelines.pipeline_of(ours.build_task(recipe, digits_dir))
    result = pipelines.measure_inputs(pipeline, batch=8, warmup=1, count=2)
    assert result["image_size"] == 32
    assert result["ours"]["images_per_s"] > 0 and result["anchor"]["images_per_s"] > 0


def test_input_only_needs_a_classification_pipeline():
    with pytest.raises(UsageError, match="--input_only compares classification input pipelines"):
        pipelines.pipeline_of(object())


def test_input_only_json(cli_env, digits_dir):
    args = ["--recipe=resnet/default", "--batch=8", "--steps=1", "--warmup_steps=1"]
    args += ["--input_only", f"--data_dir={digits_dir}", "--json"]
    done = _throughput(*args, env=cli_env)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["anchor"]["images_per_s"] > 0 and result["model"] == "resnet18"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--recipe=resnet/resnet51_imagenet"], "did you mean 'resnet50_imagenet'"),
        (["--model=resnet"], "--model=resnet is a family"),
        (["--precision=fp8"], "precision"),
        (["--batch=0"], "--batch must be at least 1"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(cli_env, args, message):
    done = _throughput(*args, env=cli_env, timeout=120)
    assert done.returncode == 2
    assert done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1
    assert done.stderr.startswith("error: ") and message in done.stderr
