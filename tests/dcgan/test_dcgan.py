"""DCGAN through its CLI: shapes, samples as a PNG grid, a SavedModel from (noise, class) to
images answered in a fresh process, a kill and resume that restores both models, both
optimisers and the generator's weight average, and bad input as one line."""

from __future__ import annotations

import signal
import subprocess

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image
from zoo_testing import (
    event_file_steps,
    event_files,
    latest_step,
    model_command,
    one_error_line,
    run_model,
    wait_for,
)

from models.core import registry

SMALL = ("--gin_param=dcgan.generator_width = 8", "--gin_param=dcgan.discriminator_width = 8")


@pytest.mark.parametrize("name, size", [("dcgan_32", 32), ("dcgan_64", 64)])
def test_generator_draws_tanh_images_and_discriminator_scores_each(name, size):
    pair = registry.create_model(name, generator_width=8, discriminator_width=8)
    images = pair.generator(pair.example_inputs(3), training=False)
    assert images.shape == (3, size, size, 3)
    assert float(tf.reduce_max(tf.abs(images))) <= 1.0
    logits = pair.discriminator({"image": images, "label": tf.zeros([3], tf.int32)})
    assert logits.shape == (3,)


def test_an_image_size_the_layers_cannot_reach_is_one_line():
    from models.core.errors import UsageError

    with pytest.raises(UsageError, match="image_size=48 must be 8, 16, 32, 64"):
        registry.model_entry("dcgan_32").builder(image_size=48)


def _train(model_dir, steps: int, *args: str) -> list[str]:
    return model_command(
        "dcgan",
        model_dir,
        "--mode=train",
        *SMALL,
        f"--gin_param=train.steps = {steps}",
        "--gin_param=train.checkpoint_every_steps = 2",
        "--gin_param=train.steps_per_loop = 2",
        "--gin_param=train.synthetic_input = True",  # one batch, every step: reproducible
        "--gin_param=generator/optimizer.ema_decay = 0.9",
        *args,
    )


def _image_steps(folder) -> list[list[int]]:
    """For each TensorBoard event file in `folder` that holds sample grids: their steps."""
    files = (event_file_steps(path) for path in event_files(folder))
    return [steps["samples"] for steps in files if "samples" in steps]


def _checkpoint_values(model_dir) -> dict[str, np.ndarray]:
    reader = tf.train.load_checkpoint(str(model_dir))
    names = [n for n in reader.get_variable_to_shape_map() if "OBJECT_GRAPH" not in n]
    return {n: reader.get_tensor(n) for n in names if "save_counter" not in n}


@pytest.mark.slow
def test_kill_and_resume_restores_both_models_optimisers_and_the_generator_average(
    tmp_path, cli_env
):
    killed, straight = tmp_path / "killed", tmp_path / "straight"
    process = subprocess.Popen(_train(killed, 10**6), env=cli_env, stdout=subprocess.DEVNULL)
    wait_for(lambda: latest_step(killed) >= 4, process, timeout=600)
    process.send_signal(signal.SIGKILL)
    process.wait()
    saved = latest_step(killed)
    resumed = subprocess.run(
        _train(killed, saved + 4), env=cli_env, capture_output=True, text=True, timeout=600
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"resumed from checkpoint at step {saved}" in resumed.stdout
    reference = subprocess.run(
        _train(straight, saved + 4), env=cli_env, capture_output=True, text=True, timeout=600
    )
    assert reference.returncode == 0, reference.stderr[-3000:]
    want, got = _checkpoint_values(straight), _checkpoint_values(killed)
    assert set(got) == set(want)
    for part in ("generator/", "discriminator/", "optimizer_generator/", "average_generator/"):
        assert any(name.startswith(part) for name in got), part
    assert any(name.startswith("optimizer_discriminator/") for name in got)
    for name, value in want.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-4, atol=1e-6, err_msg=name)


@pytest.mark.slow
def test_a_sample_grid_per_evaluation(tmp_path, cli_env):
    """(The export and --mode=predict: tests/serving_checks.py, on the memorised run.)"""
    run = tmp_path / "run"
    trained = run_model(
        "dcgan",
        run,
        "--mode=train_and_eval",
        *SMALL,
        "--gin_param=train.steps = 2",
        "--gin_param=train.steps_per_loop = 1",
        "--gin_param=evaluation.every_steps = 1",
        env=cli_env,
    )
    assert trained.returncode == 0, trained.stderr[-3000:]
    evaluations = run / "evaluations" / "validation"
    for step in (1, 2):
        assert Image.open(evaluations / f"samples-{step}.png").size == (8 * 32 + 9 * 2,) * 2
    assert _image_steps(evaluations) == [[1, 2]]  # one event file holds every grid


CASES = {
    "samples without a PNG to draw them into": (
        ["--mode=predict", "--num_images=4"],
        "error: --mode=predict --num_images needs --output=FILE.png",
    ),
    "samples and a picture at once": (
        ["--mode=predict", "--num_images=4", "--image=/nowhere/a.jpg", "--output=a.png"],
        "error: --mode=predict takes one of --image",
    ),
    "a loss that does not exist": (
        ["--gin_param=ImageGenerationTask.loss = 'hinged'"],
        "ImageGenerationTask.loss",
    ),
    "a 64 px model on 32 px digits": (
        ["--gin_param=run.model = 'dcgan_64'"],
        "dcgan_64 fixes image_size = 64",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_is_one_line(case, tmp_path, cli_env):
    args, expected = CASES[case]
    line = one_error_line(run_model("dcgan", tmp_path / "run", *args, env=cli_env))
    assert line.startswith("error: ") and expected in line
    assert not list((tmp_path / "run").glob("ckpt-*"))
