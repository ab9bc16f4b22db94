"""ClassificationInput on the built-in digits: batches, eval padding, sharding, validation."""

from __future__ import annotations

import hashlib
import io
import math
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

from models.core.errors import UsageError
from models.data.classification import ClassificationInput
from models.data.imagenet_schema import image_example

SIZE = 16


def make_input(data_dir: str | None = None, **overrides) -> ClassificationInput:
    """A small-image pipeline over data_dir (None: the built-in digits)."""
    return ClassificationInput(
        data_dir=data_dir, num_classes=10, image_size=SIZE, shuffle_buffer=64, **overrides
    )


def real_examples(dataset: tf.data.Dataset, steps: int) -> tuple[list[bytes], list[int]]:
    """(image digests, labels) of the non-padding examples in the first `steps` batches."""
    digests, labels = [], []
    for images, batch_labels in dataset.take(steps):
        for image, label in zip(images.numpy(), batch_labels.numpy(), strict=True):
            if label >= 0:
                digests.append(hashlib.sha1(image.tobytes()).digest())
                labels.append(int(label))
    return digests, labels


def write_records(directory: Path, split: str, examples: list[tf.train.Example]) -> None:
    """One TFRecord shard of split holding examples."""
    directory.mkdir(parents=True, exist_ok=True)
    with tf.io.TFRecordWriter(str(directory / f"{split}-00000-of-00001")) as writer:
        for example in examples:
            writer.write(example.SerializeToString())


def digit_example(label: int, mode: str = "RGB") -> tf.train.Example:
    """A record of a plain 12x20 JPEG saved in the given PIL mode (RGB or grayscale L)."""
    buffer = io.BytesIO()
    Image.new(mode, (12, 20), 128).save(buffer, format="JPEG")
    return image_example(buffer.getvalue(), label, str(label), "x.jpeg", 20, 12)


# ---------------------------------------------------------------- batches


def test_builtin_default_train_batches(digits_dir: str) -> None:
    data = make_input()
    assert data.data_dir == digits_dir
    images, labels = next(iter(data.dataset("train", 32, seed=0)))
    assert images.shape == (32, SIZE, SIZE, 3) and images.dtype == tf.float32
    assert labels.shape == (32,) and labels.dtype == tf.int32
    assert 0 <= int(tf.reduce_min(labels)) and int(tf.reduce_max(labels)) <= 9
    low = min((0 - m) / s for m, s in zip(data.mean_rgb, data.stddev_rgb, strict=True))
    high = max((255 - m) / s for m, s in zip(data.mean_rgb, data.stddev_rgb, strict=True))
    assert low - 1e-3 <= float(tf.reduce_min(images)) < float(tf.reduce_max(images)) <= high + 1e-3


def test_bfloat16_without_augmentation(digits_dir: str) -> None:
    data = make_input(digits_dir, dtype="bfloat16", augmentation="none")
    images, labels = next(iter(data.dataset("train", 8, seed=0)))
    assert images.dtype == tf.bfloat16 and images.shape == (8, SIZE, SIZE, 3)
    assert labels.dtype == tf.int32


@pytest.mark.parametrize(
    "policy",
    [
        {"augment_policy": "autoaugment"},
        {"augment_policy": "randaugment"},
        {"color_distortion": "brightness_chroma"},
        {"color_distortion": "slim_fast"},
        {"color_distortion": "slim_full"},
    ],
)
@pytest.mark.slow
def test_augment_policy_changes_train_images_only(digits_dir: str, policy: dict) -> None:
    plain, augmented = make_input(augmentation="none"), make_input(augmentation="none", **policy)
    images, labels = next(iter(plain.dataset("train", 64, seed=0)))
    changed, same_labels = next(iter(augmented.dataset("train", 64, seed=0)))
    assert changed.shape == images.shape and changed.dtype == images.dtype
    np.testing.assert_array_equal(same_labels, labels)
    differs = np.any(np.abs(changed.numpy() - images.numpy()) > 1e-3, axis=(1, 2, 3))
    assert differs.mean() > 0.2  # most draws change pixels (identity-like ops exist)
    eval_plain = next(iter(plain.dataset("validation", 64)))[0]
    np.testing.assert_array_equal(next(iter(augmented.dataset("validation", 64)))[0], eval_plain)


def test_seeded_training_is_reproducible(digits_dir: str) -> None:
    data = make_input(digits_dir)
    first = [b for b in data.dataset("train", 16, seed=7).take(2)]
    again = [b for b in data.dataset("train", 16, seed=7).take(2)]
    other = next(iter(data.dataset("train", 16, seed=8)))
    for (x1, y1), (x2, y2) in zip(first, again, strict=True):
        np.testing.assert_array_equal(x1.numpy(), x2.numpy())
        np.testing.assert_array_equal(y1.numpy(), y2.numpy())
    assert not np.array_equal(first[0][0].numpy(), other[0].numpy())


def test_eval_sees_every_example_once_then_padding(digits_dir: str, read_examples) -> None:
    data = make_input(digits_dir)
    n, batch = data.num_examples("validation"), 64
    steps = math.ceil(n / batch)
    dataset = data.dataset("validation", batch)
    digests, labels = real_examples(dataset, steps)
    assert len(labels) == n == 360 and len(set(digests)) == n
    expected = Counter(
        e.features.feature["image/class/label"].int64_list.value[0] - 1
        for e in read_examples(data.files("validation"))
    )
    assert Counter(labels) == expected
    images, pad_labels = list(dataset.take(steps + 1))[-1]
    assert set(pad_labels.numpy()) == {-1} and not np.any(images.numpy())


@pytest.mark.parametrize("pipelines", [2, 3])  # 3 > 2 validation files: records are sharded.
def test_eval_sharding_is_disjoint_and_complete(digits_dir: str, pipelines: int) -> None:
    data = make_input(digits_dir)
    global_batch = 16 * pipelines
    steps = math.ceil(data.num_examples("validation") / global_batch)
    shards = []
    for pipeline in range(pipelines):
        context = tf.distribute.InputContext(pipelines, pipeline, pipelines)
        dataset = data.dataset("validation", global_batch, input_context=context)
        assert dataset.element_spec[1].shape == (16,)
        shards.append(set(real_examples(dataset, steps)[0]))
    assert sum(len(s) for s in shards) == len(set().union(*shards)) == 360


def test_train_sharding_splits_files(digits_dir: str) -> None:
    data = make_input(digits_dir, augmentation="none")
    seen = []
    for pipeline in range(2):
        context = tf.distribute.InputContext(2, pipeline, 2)
        seen.append(set(real_examples(data.dataset("train", 64, context, seed=0), 4)[0]))
    assert seen[0] and seen[1] and not seen[0] & seen[1]


def test_serving_decode_matches_eval(digits_dir: str, read_examples) -> None:
    data = make_input(digits_dir)
    first = read_examples(data.files("validation"))[0]
    image = data.decode_for_serving(
        tf.constant(first.features.feature["image/encoded"].bytes_list.value[0])
    )
    images, _ = next(iter(data.dataset("validation", 4)))
    assert image.shape == (SIZE, SIZE, 3)
    np.testing.assert_allclose(image.numpy(), images[0].numpy(), atol=1e-5)


def test_grayscale_jpeg_gives_three_channels(tmp_path: Path) -> None:
    for split in ("train", "validation"):
        write_records(tmp_path, split, [digit_example(1, "L"), digit_example(2, "L")])
    data = make_input(str(tmp_path))
    for split in ("train", "validation"):
        images, labels = next(iter(data.dataset(split, 2, seed=0)))
        assert images.shape == (2, SIZE, SIZE, 3)


def test_label_out_of_range_fails_in_the_pipeline(digits_dir: str) -> None:
    data = ClassificationInput(data_dir=digits_dir, num_classes=9, image_size=SIZE)  # Digit 9.
    with pytest.raises(tf.errors.InvalidArgumentError, match="label out of range"):
        for _ in data.dataset("validation", 60).take(6):
            pass


# ---------------------------------------------------------------- counts and files


def test_num_examples_sources(digits_dir: str, tmp_path: Path) -> None:
    assert make_input(digits_dir).num_examples("train") == 1437
    assert make_input(digits_dir, num_train_examples=5).num_examples("train") == 5
    shutil.copy(Path(digits_dir) / "validation-00000-of-00002", tmp_path)
    assert make_input(str(tmp_path)).num_examples("validation") == 180  # Counted: no info file.


def test_missing_data_dir(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"--data_dir .*nowhere does not exist"):
        make_input(str(tmp_path / "nowhere")).files("train")


def test_empty_data_dir(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"--data_dir .* has no train files matching 'train-\*'"):
        make_input(str(tmp_path)).dataset("train", 8)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"augmentation": "autoaugment"}, "augmentation"),
        ({"dtype": "float16"}, "dtype"),
        ({"color_distortion": "slim_fsat"}, "did you mean 'slim_fast'"),
        ({"augment_policy": "randaugmnet"}, "did you mean 'randaugment'"),
        ({"augment_policy": "autoaugment", "autoaugment_name": "v9"}, "autoaugment_name"),
        ({"augment_policy": "randaugment", "randaugment_magnitude": 40}, "magnitude"),
    ],
)
def test_bad_options(kwargs: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        make_input(**kwargs)


def test_unknown_split(digits_dir: str) -> None:
    with pytest.raises(UsageError, match="did you mean 'train'"):
        make_input(digits_dir).files("trian")


def test_indivisible_global_batch(digits_dir: str) -> None:
    context = tf.distribute.InputContext(1, 0, 3)
    with pytest.raises(UsageError, match="not divisible by 3 replicas"):
        make_input(digits_dir).dataset("train", 8, context)


# ---------------------------------------------------------------- validate()


def test_validate_accepts_digits(digits_dir: str) -> None:
    make_input(digits_dir).validate()


def test_validate_reports_truncated_file(digits_dir: str, tmp_path: Path) -> None:
    shutil.copytree(digits_dir, tmp_path, dirs_exist_ok=True)
    shard = tmp_path / "train-00000-of-00004"
    shard.write_bytes(shard.read_bytes()[:-100])
    with pytest.raises(UsageError, match=r"train-00000-of-00004 is truncated or corrupt"):
        make_input(str(tmp_path)).validate()


@pytest.mark.parametrize("key", ["image/class/label", "image/encoded"])
def test_validate_reports_missing_key(tmp_path: Path, key: str) -> None:
    example = digit_example(3)
    del example.features.feature[key]
    for split in ("train", "validation"):
        write_records(tmp_path, split, [digit_example(1), example])
    with pytest.raises(UsageError, match=f"train-00000-of-00001 has records without the '{key}'"):
        make_input(str(tmp_path)).validate()


def test_validate_reports_label_out_of_range(digits_dir: str) -> None:
    data = ClassificationInput(data_dir=digits_dir, num_classes=9)
    with pytest.raises(UsageError, match=r"has label 10 outside \[1, 10\) for num_classes=9"):
        data.validate()


def test_validate_always_scans_the_first_file_of_each_split(tmp_path: Path) -> None:
    write_records(tmp_path, "train", [digit_example(1)])
    write_records(tmp_path, "validation", [digit_example(1), digit_example(0)])
    with pytest.raises(UsageError, match="validation-00000-of-00001 has label 0 outside"):
        make_input(str(tmp_path)).validate(max_bytes=0)
