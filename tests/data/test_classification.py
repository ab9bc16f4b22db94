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
from records_editing import bad_after_sample, damaged_header, rewrite_shard, set_image

from models.core.errors import UsageError, data_error_message
from models.data.classification import NOT_JPEG, ClassificationInput
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


def copy_shards(digits_dir: str, target: Path) -> Path:
    """The built-in digits' TFRecord shards (without dataset_info.json) copied into target."""
    target.mkdir(parents=True, exist_ok=True)
    for shard in Path(digits_dir).glob("*-of-*"):
        shutil.copy(shard, target)
    return target


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


def test_data_dir_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "train-00000-of-00001").write_bytes(b"")
    with pytest.raises(UsageError, match=r"--data_dir .*train-00000-of-00001 is not a directory"):
        make_input(str(tmp_path / "train-00000-of-00001")).validate()


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


def test_validate_reports_label_out_of_range(digits_dir: str, tmp_path: Path) -> None:
    copy_shards(digits_dir, tmp_path)  # no dataset_info.json: the labels are the only clue
    data = ClassificationInput(data_dir=str(tmp_path), num_classes=9)
    with pytest.raises(UsageError, match=r"has label 10 outside \[1, 10\) for num_classes=9"):
        data.validate()


def test_validate_always_scans_the_first_file_of_each_split(tmp_path: Path) -> None:
    write_records(tmp_path, "train", [digit_example(1)])
    write_records(tmp_path, "validation", [digit_example(1), digit_example(0)])
    with pytest.raises(UsageError, match="validation-00000-of-00001 has label 0 outside"):
        make_input(str(tmp_path)).validate(max_bytes=0)


# ---------------------------------------------------------------- validate(): dataset_info.json


def test_validate_class_count_must_match_dataset_info(digits_dir: str) -> None:
    data = ClassificationInput(data_dir=digits_dir, num_classes=1000)
    message = (
        r"digits-v1/dataset_info.json says num_classes = 10 but classification_input.num_classes"
        r" = 1000; set --gin_param='classification_input.num_classes = 10'"
    )
    with pytest.raises(UsageError, match=message):
        data.validate()


def test_validate_label_offset_must_match_dataset_info(digits_dir: str) -> None:
    with pytest.raises(UsageError, match=r"says label_offset = 1 but .*label_offset = 0; set "):
        make_input(digits_dir, label_offset=0).validate()


def test_validate_without_dataset_info_trusts_the_recipe(digits_dir: str, tmp_path: Path) -> None:
    copy_shards(digits_dir, tmp_path)
    make_input(str(tmp_path)).validate()
    ClassificationInput(data_dir=str(tmp_path), num_classes=1000).validate()  # labels fit


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[10]", "must hold a JSON object, not list"),
        ('{"num_classes": "ten"}', "'num_classes' must be an integer, got 'ten'"),
        ('{"num_train_examples": 1.5}', "'num_train_examples' must be an integer, got 1.5"),
        ("num_classes: 10", "is not valid JSON"),
    ],
)
def test_malformed_dataset_info(digits_dir: str, tmp_path: Path, text: str, message: str) -> None:
    (copy_shards(digits_dir, tmp_path) / "dataset_info.json").write_text(text)
    with pytest.raises(UsageError, match=message):
        make_input(str(tmp_path)).validate()


# ---------------------------------------------------------------- validate(): shards and images


def png_bytes() -> bytes:
    """A PNG (the pipeline decodes JPEG only)."""
    buffer = io.BytesIO()
    Image.new("RGB", (12, 20), 128).save(buffer, format="PNG")
    return buffer.getvalue()


def test_validate_reports_an_empty_shard(digits_dir: str, tmp_path: Path) -> None:
    shutil.copytree(digits_dir, tmp_path, dirs_exist_ok=True)
    (tmp_path / "validation-00001-of-00002").write_bytes(b"")
    with pytest.raises(UsageError, match=r"validation-00001-of-00002 is empty \(0 bytes\)"):
        make_input(str(tmp_path)).validate()


@pytest.mark.parametrize(
    ("image", "message"),
    [
        (lambda e: b"not a jpeg", f"{NOT_JPEG} \\(it starts with 6e 6f 74 20\\)"),
        (lambda e: png_bytes(), r"ff d8 \(it starts with 89 50 4e 47\)"),
        (lambda e: b"", r"ff d8 \(it starts with nothing\)"),
        (damaged_header, r"cannot decode image/encoded as a JPEG: Invalid JPEG data, size 200$"),
    ],
    ids=["garbage", "png", "empty", "damaged header"],
)
def test_validate_decodes_the_first_images_of_every_shard(
    digits_dir: str, tmp_path: Path, capfd, image, message: str
) -> None:
    shutil.copytree(digits_dir, tmp_path, dirs_exist_ok=True)
    last = tmp_path / "train-00003-of-00004"  # beyond the byte budget below: only sampled
    rewrite_shard(last, lambda i, e: set_image(e, image(e)) if i == 1 else None)
    with pytest.raises(UsageError, match=r"train-00003-of-00004 record 1: .*" + message) as error:
        make_input(str(tmp_path)).validate(max_bytes=0)
    assert str(error.value).count("\n") == 0
    assert capfd.readouterr().err == ""  # libjpeg's own lines are kept off the terminal


def first_error(data: ClassificationInput, split: str) -> tf.errors.OpError:
    """The error the pipeline raises while reading one pass of split."""
    with pytest.raises(tf.errors.OpError) as error:
        for _ in data.dataset(split, 32, seed=0).take(100):
            pass
    return error.value


@pytest.mark.parametrize("split", ["train", "validation"])
def test_non_jpeg_after_the_sample_fails_the_pipeline_with_a_mapped_error(
    digits_dir: str, tmp_path: Path, capfd, split: str
) -> None:
    shutil.copytree(digits_dir, tmp_path, dirs_exist_ok=True)
    bad_after_sample(tmp_path, split, lambda e: b"not a jpeg")
    data = make_input(str(tmp_path))
    data.validate()  # the sample (two records a shard) misses it
    error = first_error(data, split)
    assert isinstance(error, tf.errors.InvalidArgumentError) and NOT_JPEG in error.message
    assert data_error_message(error).startswith("an image in the records cannot be decoded: ")
    assert "JPEG" not in capfd.readouterr().err  # checked before libjpeg sees the bytes


def test_damaged_jpeg_after_the_sample_is_a_decode_error(digits_dir: str, tmp_path: Path) -> None:
    shutil.copytree(digits_dir, tmp_path, dirs_exist_ok=True)
    bad_after_sample(tmp_path, "validation", damaged_header)
    data = make_input(str(tmp_path))
    data.validate()
    error = first_error(data, "validation")
    assert isinstance(error, tf.errors.InvalidArgumentError)
    assert "Invalid JPEG data, size 200" in error.message and "ExtractJpegShape" in error.message
    assert data_error_message(error).startswith("an image in the records cannot be decoded: ")
