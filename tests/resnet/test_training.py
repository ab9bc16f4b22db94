"""ResNet end to end through the CLI: time-to-accuracy, resume after SIGKILL, SIGTERM, export."""

from __future__ import annotations

import re
import signal
import subprocess
from pathlib import Path

import pytest
from cli import SHARES_TRAINED_RUN, latest_record, resnet_command, run_resnet
from zoo_testing import PYTHON, latest_step, summary_steps, wait_for


@pytest.mark.slow
@SHARES_TRAINED_RUN
def test_default_recipe_reaches_target(trained):
    model_dir, stdout = trained.model_dir, trained.stdout
    record = latest_record(model_dir)
    assert record["status"] == "success"
    assert record["final_metrics"]["top_1_accuracy"] >= 0.97
    assert record["time_to_accuracy_s"] > 0
    assert "time to accuracy" in stdout
    assert (model_dir / "operative_config.gin").exists()
    mlperf_log = next((model_dir / "records").glob("*.mlperf.log")).read_text()
    for key in ("init_start", "run_start", "eval_accuracy", "run_stop"):
        assert f'"key": "{key}"' in mlperf_log
    assert '"status": "success"' in mlperf_log
    # TensorBoard's curves reach the last step (the process ends without Python's teardown)
    train, evaluation = (summary_steps(model_dir / "summaries" / f) for f in ("train", "eval"))
    assert max(train["loss"]) == record["steps"] and train["operative_config"] == [0]
    assert max(evaluation["top_1_accuracy"]) == record["steps"]


@pytest.mark.slow
@SHARES_TRAINED_RUN
def test_rerun_of_a_run_that_reached_its_target_trains_no_more(trained):
    model_dir, env, first = trained.model_dir, trained.env, trained.record
    rerun = run_resnet(model_dir, env=env)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert f"resumed from checkpoint at step {first['steps']}" in rerun.stdout
    record = latest_record(model_dir)
    assert record["resumed"] and record["steps"] == first["steps"]
    assert record["time_to_accuracy_s"] == first["time_to_accuracy_s"]
    assert len(record["segments"]) == 2


@pytest.mark.slow
@SHARES_TRAINED_RUN
def test_export_classifies_jpeg_bytes_in_fresh_process(trained, digits_dir):
    model_dir, env = trained.model_dir, trained.env
    result = run_resnet(model_dir, "--mode=export", env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    export_dir = re.search(r"exported SavedModel to (\S+)", result.stdout).group(1)
    script = f"""
import sys, tensorflow as tf
files = tf.io.gfile.glob({str(Path(digits_dir) / "validation-*")!r})
spec = {{"image/encoded": tf.io.FixedLenFeature([], tf.string),
         "image/class/label": tf.io.FixedLenFeature([], tf.int64)}}
examples = [tf.io.parse_single_example(r, spec) for r in tf.data.TFRecordDataset(files).take(64)]
serve = tf.saved_model.load({export_dir!r}).signatures["serving_default"]
out = serve(image_bytes=tf.stack([e["image/encoded"] for e in examples]))
labels = [int(e["image/class/label"]) - 1 for e in examples]
right = sum(int(c) == l for c, l in zip(out["classes"].numpy(), labels))
print("correct", right, "of", len(labels), "first", int(out["classes"][0]) == labels[0])
empty = serve(image_bytes=tf.constant([], tf.string))
print("empty", empty["classes"].shape.as_list(), empty["probabilities"].shape.as_list())
"""
    # A fresh process that imports no project code: only TensorFlow and the SavedModel.
    out = subprocess.run(
        [PYTHON, "-c", script],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    right, total = map(int, re.search(r"correct (\d+) of (\d+)", out.stdout).groups())
    assert right / total >= 0.9
    assert "first True" in out.stdout
    assert "empty [0] [0, 10]" in out.stdout  # an empty batch gets empty answers


@pytest.mark.slow
def test_sigkill_then_rerun_resumes_and_reaches_target(tmp_path, cli_env):
    command = resnet_command(tmp_path)
    process = subprocess.Popen(command, env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for(lambda: latest_step(tmp_path) > 0, process)
    process.send_signal(signal.SIGKILL)
    process.wait()
    saved = latest_step(tmp_path)
    rerun = subprocess.run(command, env=cli_env, capture_output=True, text=True, timeout=900)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    resumed = int(re.search(r"resumed from checkpoint at step (\d+)", rerun.stdout).group(1))
    assert resumed == saved > 0
    record = latest_record(tmp_path)
    assert record["status"] == "success" and record["final_metrics"]["top_1_accuracy"] >= 0.97


def test_sigterm_writes_checkpoint_before_exit(tmp_path, cli_env):
    command = resnet_command(tmp_path, "--gin_param=train.checkpoint_every_steps=100000")
    process = subprocess.Popen(
        command, env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    wait_for(lambda: (tmp_path / "operative_config.gin").exists(), process)
    # Interval saves are off, but CheckpointManager saves once after the first loop when
    # model_dir has no checkpoint yet; SIGTERM must save a newer one after the current step.
    before = latest_step(tmp_path)
    process.send_signal(signal.SIGTERM)
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 143, stderr[-3000:]
    step = int(re.search(r"checkpoint saved at step (\d+)", stdout).group(1))
    assert step > before and latest_step(tmp_path) == step
    assert latest_record(tmp_path)["status"] == "aborted"


def test_steps_replaces_the_recipes_length_however_spelled(tmp_path, cli_env):
    """The recipe sets `train.epochs`; `--steps=3` trains 3 steps without unsetting it."""
    result = run_resnet(tmp_path, "--mode=train", "--steps=3", env=cli_env, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert latest_step(tmp_path) == 3 and "done: step=3, epoch=0.136" in result.stdout
