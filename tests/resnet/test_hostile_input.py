"""Hostile input and damaged state through the CLI: one `error:` line (exit 2) and every
checkpoint in model_dir left byte-identical and restorable; a damaged checkpoint state file
resumes from the newest intact checkpoint instead of restarting over it."""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
import tensorflow as tf
from cli import checkpoint_files, resnet_command, run_resnet
from records_editing import bad_after_sample, damaged_header
from zoo_testing import one_error_line, restorable_checkpoints, wait_for

from models.core.errors import MAX_LINE


@pytest.fixture()
def with_checkpoints(tmp_path):
    """A model_dir holding ckpt-22 and ckpt-44 (a small checkpoint, not this recipe's)."""
    model_dir = tmp_path / "model"
    step = tf.Variable(0, dtype=tf.int64)
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(step=step), str(model_dir), 5)
    for value in (22, 44):
        step.assign(value)
        manager.save(checkpoint_number=value)
    return model_dir


def _bad_gin_file(tmp_path) -> list[str]:
    path = tmp_path / "broken.gin"
    path.write_text("train.epochs = (\n")
    return [f"--gin_file={path}"]


BAD_INPUT = {
    "wrong-typed gin value": (["--gin_param=train.epochs = 'two'"], "train.epochs = 'two'"),
    "slice beyond the host": (["--slice=cpu-100000"], "at most 64"),
    "strategy against slice": (
        ["--strategy=one_device", "--slice=cpu-2"],
        "--strategy=one_device contradicts --slice=cpu-2",
    ),
    "huge gin binding": ([f"--gin_param=train.epochs = {'1' * 100_000}x"], "characters cut"),
    "another family's recipe": (
        ["--gin_file=dcgan/default.gin"],
        "dcgan/default.gin trains dcgan_32, a dcgan model: run it with python -m models.dcgan",
    ),
}
# Cases found only after the data and model are built (~10 s more each): `make test` only.
BAD_INPUT_LATE = {
    "wrong-typed function argument": (
        ["--gin_param=learning_rate.base_lr = 'high'"],
        "learning_rate has the wrong type",
    ),
    "no checkpoints kept": (["--gin_param=train.max_checkpoints_to_keep = 0"], "keep at least 1"),
    "batch of 0": (["--gin_param=train.global_batch_size = 0"], "positive whole number"),
    "negative steps beside the recipe's epochs": (
        ["--gin_param=train.steps = -5"],
        "train.steps=-5: expected a number >= 0",
    ),
    "negative batch": (["--gin_param=train.global_batch_size = -8"], "positive whole number"),
    "accuracy target above 1": (["--target_value=2.0"], "lies in [0, 1]"),
    # with_checkpoints holds another model's checkpoint: nothing is evaluated or exported
    **{
        f"--mode={mode} on another model's checkpoint": ([f"--mode={mode}"], "does not fit")
        for mode in ("train", "train_and_eval", "eval", "continuous_eval", "export")
    },
}
CASES = [
    *sorted(BAD_INPUT),
    *(pytest.param(case, marks=pytest.mark.slow) for case in sorted(BAD_INPUT_LATE)),
]
BAD_INPUT.update(BAD_INPUT_LATE)


@pytest.mark.parametrize("case", CASES)
def test_bad_input_is_one_line_and_leaves_checkpoints_intact(case, with_checkpoints, cli_env):
    args, expected = BAD_INPUT[case]
    before, names = checkpoint_files(with_checkpoints), sorted(with_checkpoints.iterdir())
    result = run_resnet(with_checkpoints, *args, env=cli_env, timeout=300)
    assert one_error_line(result), result.stderr[-3000:]
    assert expected in result.stderr
    assert sorted(with_checkpoints.iterdir()) == names  # nothing written (records, summaries)
    assert len(result.stderr.strip()) <= len("error: ") + MAX_LINE
    assert "Traceback" not in result.stdout + result.stderr
    assert checkpoint_files(with_checkpoints) == before
    assert restorable_checkpoints(with_checkpoints)


def test_a_gin_syntax_error_names_its_file(tmp_path, cli_env):
    result = run_resnet(tmp_path / "model", *_bad_gin_file(tmp_path), env=cli_env)
    assert one_error_line(result) and "broken.gin" in result.stderr


@pytest.mark.parametrize(
    "missing", ["index", pytest.param("data-00000-of-00001", marks=pytest.mark.slow)]
)
def test_an_incomplete_newest_checkpoint_is_one_line(missing, with_checkpoints, cli_env):
    (with_checkpoints / f"ckpt-44.{missing}").unlink()
    before = checkpoint_files(with_checkpoints)
    result = run_resnet(with_checkpoints, "--mode=train", env=cli_env, timeout=300)
    assert one_error_line(result), result.stderr[-3000:]
    assert "ckpt-44 is incomplete" in result.stderr and "ckpt-22" in result.stderr
    assert checkpoint_files(with_checkpoints) == before


def test_an_unwritable_model_dir_is_one_line(cli_env):
    result = run_resnet("/proc/self", "--mode=train", env=cli_env, timeout=300)
    assert one_error_line(result) and "cannot write to it" in result.stderr


@pytest.mark.slow
def test_continuous_eval_with_no_checkpoint_is_one_line(tmp_path, cli_env):
    timeout = "--gin_param=train.continuous_eval_timeout_s = 1"
    result = run_resnet(tmp_path, "--mode=continuous_eval", timeout, env=cli_env)
    assert one_error_line(result) and "no checkpoint appeared" in result.stderr


@pytest.fixture(scope="module")
def trained_two_epochs(tmp_path_factory, digits_dir):
    """The default recipe trained for 2 epochs (ckpt-22, ckpt-44), no evaluation."""
    import os

    from zoo_testing import REPO

    model_dir = tmp_path_factory.mktemp("two_epochs")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    result = run_resnet(model_dir, "--mode=train", "--gin_param=train.epochs = 2", env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    return model_dir


@pytest.mark.slow
@pytest.mark.parametrize(
    "state, note",
    [
        (b"\x00\xff garbage {{", "is damaged"),
        (b'model_checkpoint_path: "ckpt-66"\n', "names"),
        (None, "is missing"),
    ],
)
def test_a_damaged_state_file_resumes_from_the_newest_checkpoint(
    state, note, trained_two_epochs, tmp_path, cli_env
):
    model_dir = tmp_path / "model"
    shutil.copytree(trained_two_epochs, model_dir)
    if state is None:
        (model_dir / "checkpoint").unlink()
    else:
        (model_dir / "checkpoint").write_bytes(state)
    kept = {k: v for k, v in checkpoint_files(model_dir).items() if k.startswith("ckpt-")}
    args = ("--mode=train", "--gin_param=train.epochs = 3")
    result = run_resnet(model_dir, *args, env=cli_env, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert note in result.stdout and "resumed from checkpoint at step 44" in result.stdout
    after = checkpoint_files(model_dir)
    assert {k: after[k] for k in kept} == kept
    assert "ckpt-66.index" in after
    assert restorable_checkpoints(model_dir)


@pytest.mark.slow
@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_saves_and_a_second_run_is_refused_meanwhile(signum, code, tmp_path, cli_env):
    """SIGTERM (preemption) and Ctrl-C alike save between two steps of a 1,000-step traced
    loop, not at its end; while the run lives, another run on its model_dir is refused."""
    long_run = ("--mode=train", "--gin_param=train.epochs = 200")  # still running when checked
    loops = ("--gin_param=evaluation.every_epochs = 100", "--gin_param=train.steps_per_loop = 1000")
    command = resnet_command(
        tmp_path, "--gin_param=train.checkpoint_every_steps=100000", *long_run, *loops
    )
    process = subprocess.Popen(
        command, env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    wait_for(lambda: (tmp_path / "operative_config.gin").exists(), process)
    second = run_resnet(tmp_path, env=cli_env, timeout=300)
    assert one_error_line(second) and "in use by another run" in second.stderr
    process.send_signal(signum)
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == code, stderr[-3000:]
    saved = re.search(rf"{signal.Signals(signum).name}: checkpoint saved at step (\d+);", stdout)
    assert saved and int(saved.group(1)) % 1000, stdout[-2000:]  # mid-loop
    assert "Traceback" not in stderr
    assert not (tmp_path / "run.lock").exists()
    assert restorable_checkpoints(tmp_path)


@pytest.mark.slow
def test_sigterm_during_start_up_says_so(tmp_path, cli_env):
    process = subprocess.Popen(
        resnet_command(tmp_path),
        env=cli_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for(lambda: (tmp_path / "run.lock").exists(), process)
    process.send_signal(signal.SIGTERM)
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 143
    assert "SIGTERM: " in stdout + stderr and "Traceback" not in stderr


def _catches_sigterm(pid: int) -> bool:
    """Whether the process has a handler for SIGTERM (its SigCgt mask in /proc)."""
    status = Path(f"/proc/{pid}/status").read_text()
    caught = int(next(line for line in status.splitlines() if line.startswith("SigCgt:"))[7:], 16)
    return bool(caught & 1 << (signal.SIGTERM - 1))


def test_sigterm_while_tensorflow_loads_says_so(tmp_path, cli_env):
    """The handler is in place from the CLI's first line, seconds before TensorFlow is loaded."""
    process = subprocess.Popen(
        resnet_command(tmp_path), env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    wait_for(lambda: _catches_sigterm(process.pid), process)
    process.send_signal(signal.SIGTERM)
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 143
    assert stderr.decode().strip() == "SIGTERM: stopped while starting up; nothing was saved"
    assert not list(tmp_path.iterdir())


@pytest.fixture()
def small_disk(tmp_path):
    """An 8 MiB tmpfs (room for one 5.7 MB checkpoint of the default recipe, not two)."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)])
    if done.returncode:
        pytest.skip("needs root to mount a tmpfs")
    yield mount
    subprocess.run(["umount", "-l", str(mount)])


@pytest.mark.slow
def test_a_full_disk_during_a_save_is_one_line_and_keeps_the_last_checkpoint(small_disk, cli_env):
    model_dir = small_disk / "model"
    args = ("--mode=train", "--gin_param=train.epochs = 3")
    result = run_resnet(model_dir, *args, env=cli_env, timeout=600)
    assert one_error_line(result), result.stderr[-3000:]
    assert "no space left on device" in result.stderr.lower()
    assert "ckpt-22.index" in checkpoint_files(model_dir)
    assert not list(model_dir.glob("ckpt-*_temp*"))  # the failed save removed what it wrote
    assert "rerun to resume from" in result.stderr
    assert restorable_checkpoints(model_dir)


@pytest.mark.slow
def test_a_damaged_jpeg_met_mid_run_is_one_line_without_libjpeg_noise(
    tmp_path, digits_dir, cli_env
):
    """The pre-flight sample (two records a shard) misses it; the pipeline meets it at step 1:
    one error line, and libjpeg's own 'Improper call to JPEG library' line is not printed."""
    data = tmp_path / "data"
    shutil.copytree(digits_dir, data)
    bad_after_sample(data, "train", damaged_header)
    result = run_resnet(tmp_path / "model", "--mode=train", f"--data_dir={data}", env=cli_env)
    line = one_error_line(result)
    assert "cannot be decoded" in line and "Invalid JPEG data" in line
    assert "JPEG library" not in result.stdout + result.stderr
