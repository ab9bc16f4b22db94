"""Bad data given to `python -m models.resnet`: one line, exit code 2, nothing in --model_dir."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import tensorflow as tf
from PIL import Image
from zoo_testing import checkpoint_files, one_error_line, run_model

from models.data.convert.image_folder import convert


def assert_nothing_written(model_dir: Path) -> None:
    """The run left model_dir empty (it may have created it)."""
    assert not model_dir.exists() or not list(model_dir.iterdir()), list(model_dir.iterdir())


def rewrite_images(shard: Path, bad: bytes, first: int, last: int | None = None) -> None:
    """Replaces the image bytes of records first..last (all after first when last is None)."""
    examples = [tf.train.Example.FromString(r.numpy()) for r in tf.data.TFRecordDataset(str(shard))]
    for index, example in enumerate(examples):
        if index >= first and (last is None or index <= last):
            example.features.feature["image/encoded"].bytes_list.value[0] = bad
    with tf.io.TFRecordWriter(str(shard)) as writer:
        for example in examples:
            writer.write(example.SerializeToString())


def three_classes(tmp_path: Path) -> Path:
    """The converter's output for a folder of three classes (the default recipe has ten)."""
    for name in ("cat", "dog", "fish"):
        for index in range(4):
            (tmp_path / "images" / name).mkdir(parents=True, exist_ok=True)
            Image.new("RGB", (32, 32), (index * 60, 90, 20)).save(
                tmp_path / "images" / name / f"{index}.jpg"
            )
    convert(str(tmp_path / "images"), str(tmp_path / "data"), progress=False)
    return tmp_path / "data"


def empty_shard(digits_dir: str, tmp_path: Path) -> Path:
    """The digits with one zero-byte train shard."""
    data = Path(shutil.copytree(digits_dir, tmp_path / "data"))
    (data / "train-00002-of-00004").write_bytes(b"")
    return data


def undecodable_sample(digits_dir: str, tmp_path: Path) -> Path:
    """The digits with a JPEG cut inside its header as record 1 of the last train shard."""
    data = Path(shutil.copytree(digits_dir, tmp_path / "data"))
    shard = data / "train-00003-of-00004"
    record = next(iter(tf.data.TFRecordDataset(str(shard))))
    jpeg = tf.train.Example.FromString(record.numpy()).features.feature["image/encoded"]
    rewrite_images(shard, jpeg.bytes_list.value[0][:200], 1, 1)
    return data


def regular_file(digits_dir: str, tmp_path: Path) -> Path:
    """A --data_dir that is a file (one of the digits' shards)."""
    return Path(shutil.copy(Path(digits_dir) / "train-00000-of-00004", tmp_path / "shard"))


CASES = {
    "class count differs from dataset_info.json": (
        lambda digits_dir, tmp_path: three_classes(tmp_path),
        "dataset_info.json says num_classes = 3 but classification_input.num_classes = 10; "
        "set --gin_param='classification_input.num_classes = 3'",
    ),
    "zero-byte shard": (empty_shard, "train-00002-of-00004 is empty (0 bytes)"),
    "undecodable image in the sample": (
        undecodable_sample,
        "train-00003-of-00004 record 1: cannot decode image/encoded as a JPEG: "
        "Invalid JPEG data, size 200",
    ),
    "data_dir is a file": (regular_file, "shard is not a directory"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_data_fails_before_training_writes_anything(
    case: str, digits_dir: str, tmp_path: Path, cli_env: dict
) -> None:
    make_data, expected = CASES[case]
    data, model_dir = make_data(digits_dir, tmp_path), tmp_path / "model"
    result = run_model("resnet", model_dir, f"--data_dir={data}", env=cli_env, timeout=300)
    assert expected in one_error_line(result)
    assert_nothing_written(model_dir)


@pytest.mark.slow
def test_non_jpeg_the_sample_misses_stops_training_in_one_line(
    digits_dir: str, tmp_path: Path, cli_env: dict
) -> None:
    data = Path(shutil.copytree(digits_dir, tmp_path / "data"))
    for shard in data.glob("train-*"):
        rewrite_images(shard, b"not a jpeg", 2)  # records 0 and 1 (the sample) stay good
    model_dir = tmp_path / "model"
    result = run_model(
        "resnet", model_dir, f"--data_dir={data}", "--mode=train", env=cli_env, timeout=300
    )
    assert "an image in the records cannot be decoded" in one_error_line(result)
    assert checkpoint_files(model_dir) == {}
