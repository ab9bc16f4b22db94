"""Bad input: one line on stderr, exit code 2, no traceback, no checkpoint written or damaged."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import tensorflow as tf
from cli import checkpoint_files, run_resnet
from zoo_testing import one_error_line

from models.core.ports import free_ports


def _write_records(path: Path, examples: list[dict]) -> None:
    with tf.io.TFRecordWriter(str(path)) as writer:
        for features in examples:
            writer.write(
                tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString()
            )


def _copy_digits(digits_dir: str, target: Path) -> Path:
    shutil.copytree(digits_dir, target)
    return target


def _rewrite_train(data: Path, transform) -> None:
    """Rewrites every train shard, passing each Example's feature map through `transform`."""
    for shard in sorted(data.glob("train-*")):
        examples = []
        for raw in tf.data.TFRecordDataset(str(shard)):
            example = tf.train.Example.FromString(raw.numpy())
            examples.append(transform(dict(example.features.feature)))
        _write_records(shard, examples)


def _truncated(digits_dir, tmp_path) -> list[str]:
    data = _copy_digits(digits_dir, tmp_path / "data")
    for shard in data.glob("train-*"):
        blob = shard.read_bytes()
        shard.write_bytes(blob[: len(blob) // 2 + 7])
    return [f"--data_dir={data}"]


def _missing_keys(digits_dir, tmp_path) -> list[str]:
    data = _copy_digits(digits_dir, tmp_path / "data")
    _rewrite_train(data, lambda f: {"image/encoded": f["image/encoded"]})
    return [f"--data_dir={data}"]


def _label_out_of_range(digits_dir, tmp_path) -> list[str]:
    data = _copy_digits(digits_dir, tmp_path / "data")

    def relabel(features):
        features["image/class/label"] = tf.train.Feature(int64_list=tf.train.Int64List(value=[11]))
        return features

    _rewrite_train(data, relabel)
    return [f"--data_dir={data}"]


def _model_dir_is_a_file(digits_dir, tmp_path) -> list[str]:
    (tmp_path / "file").write_text("")
    return [f"--model_dir={tmp_path / 'file'}"]  # the later --model_dir wins


def _empty_dir(digits_dir, tmp_path) -> list[str]:
    (tmp_path / "empty").mkdir()
    return [f"--data_dir={tmp_path / 'empty'}"]


CASES = {
    "missing data_dir": (lambda d, t: [f"--data_dir={t / 'nowhere'}"], "--data_dir"),
    "empty data_dir": (_empty_dir, "--data_dir"),
    "truncated TFRecord": (_truncated, "train-00000-of-00004 is truncated or corrupt"),
    "records without expected keys": (_missing_keys, "image/class/label"),
    "label outside class range": (_label_out_of_range, "label"),
    "unknown gin binding": (lambda d, t: ["--gin_param=train.epoch = 3"], "did you mean 'epochs'"),
    "unknown gin file": (lambda d, t: ["--gin_file=resnet/defualt.gin"], "did you mean"),
    "slice cpu-0": (lambda d, t: ["--slice=cpu-0"], "--slice=cpu-0"),
    "XLA on a simulated CPU slice": (
        lambda d, t: ["--slice=cpu-2", "--gin_param=train.jit_compile = True"],
        "train.jit_compile=True cannot run",
    ),
    "model_dir is a file": (_model_dir_is_a_file, "not a directory"),
    "tf.data service nobody answers": (
        lambda d, t: [f"--tf_data_service=grpc://localhost:{free_ports(1)[0]}"],
        "nothing answers at localhost:",
    ),
    "negative seed": (lambda d, t: ["--seed=-1"], "--seed=-1"),
    "tpu without a TPU": (lambda d, t: ["--tpu=my-tpu"], "no TPU reachable"),
    "unknown flag": (lambda d, t: ["--epoch=3"], "epochs"),
    "--steps and --epochs": (
        lambda d, t: ["--steps=3", "--epochs=1"],
        "--steps and --epochs both set",
    ),
    "--epochs=0": (lambda d, t: ["--epochs=0"], "train for more than 0 epochs"),
    "--steps=0": (lambda d, t: ["--steps=0"], "--steps"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_one_line_exit_2_no_checkpoint(case, tmp_path, digits_dir, cli_env):
    make_args, expected = CASES[case]
    model_dir = tmp_path / "model"
    result = run_resnet(model_dir, *make_args(digits_dir, tmp_path), env=cli_env, timeout=300)
    assert one_error_line(result), result.stderr[-3000:]
    assert expected in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert checkpoint_files(model_dir) == {}


@pytest.mark.slow
def test_bad_input_leaves_existing_checkpoint_untouched(tmp_path, cli_env):
    model_dir = tmp_path / "model"
    first = run_resnet(
        model_dir, "--mode=train", "--gin_param=train.epochs = 1", env=cli_env, timeout=600
    )
    assert first.returncode == 0, first.stderr[-3000:]
    before = checkpoint_files(model_dir)
    assert before
    bad = run_resnet(model_dir, "--gin_param=trian.epochs = 2", env=cli_env, timeout=300)
    assert bad.returncode == 2
    assert checkpoint_files(model_dir) == before
    # A checkpoint another recipe wrote, and a damaged one: one line each, nothing rewritten.
    wider = run_resnet(model_dir, "--gin_param=resnet.width_multiplier = 2", env=cli_env)
    assert one_error_line(wider) and "does not fit this model and recipe" in wider.stderr
    assert checkpoint_files(model_dir) == before
    damaged = tmp_path / "damaged"
    shutil.copytree(model_dir, damaged)
    for data in damaged.glob("ckpt-*.data-*"):
        data.write_bytes(data.read_bytes()[:1000])
    damaged_files = checkpoint_files(damaged)
    broken = run_resnet(damaged, "--mode=eval", env=cli_env)
    assert one_error_line(broken) and "cannot be read" in broken.stderr
    assert checkpoint_files(damaged) == damaged_files


def test_unknown_target_metric_fails_before_training(tmp_path, cli_env):
    model_dir = tmp_path / "model"
    result = run_resnet(model_dir, "--target_metric=top1", "--target_value=0.9", env=cli_env)
    assert result.returncode == 2
    assert "top1" in result.stderr and "top_1_accuracy" in result.stderr
    assert checkpoint_files(model_dir) == {}
