"""SegmentationInput on a small build of the built-in VOC-layout digit scenes and on synthetic
records: Model Garden's parser outputs, every validation image once before the all-ignore
padding, flipped masks aligned with their images, serving decode, and the checks before a run."""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path

import gin
import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

from models.core.errors import UsageError
from models.data.builtin import digit_scenes_voc
from models.data.convert import voc
from models.data.segmentation import SegmentationInput

TRAIN, VAL = 24, 20


@pytest.fixture(scope="module")
def scenes_dir(tmp_path_factory) -> str:
    """A small build (24 train, 20 val scenes) of the built-in dataset, by its own writer."""
    directory = tmp_path_factory.mktemp("scenes_voc")
    digit_scenes_voc.write(directory, TRAIN, VAL, seed=0)
    return str(directory)


def _record_masks(data_dir: str, split: str) -> list[np.ndarray]:
    """The class maps of a split's records, decoded from their PNGs."""
    paths = sorted(str(p) for p in Path(data_dir).glob(f"{split}-*"))
    masks = []
    for record in tf.data.TFRecordDataset(paths):
        feature = tf.train.Example.FromString(record.numpy()).features.feature
        png = feature[voc.MASK_ENCODED].bytes_list.value[0]
        masks.append(np.array(Image.open(io.BytesIO(png))))
    return masks


def test_gin_configures_it_and_classes_come_from_the_data(scenes_dir: str) -> None:
    gin.parse_config(
        ["segmentation_input.image_size = 96", "segmentation_input.dtype = 'bfloat16'"]
    )
    data = SegmentationInput(data_dir=scenes_dir)
    assert (data.output_size, data.dtype, data.ignore_label) == ([96, 96], "bfloat16", 255)
    assert data.num_classes == 6
    assert data.class_names == ["background", "0", "2", "4", "5", "7"]
    assert (data.num_examples("train"), data.num_examples("validation")) == (TRAIN, VAL)
    data.validate()
    images, labels = next(iter(data.dataset("train", 4, seed=0)))
    assert images.shape == (4, 96, 96, 3) and images.dtype == tf.bfloat16


def test_training_batches(scenes_dir: str) -> None:
    data = SegmentationInput(data_dir=scenes_dir, aug_scale_min=0.5, aug_scale_max=2.0)
    images, labels = next(iter(data.dataset("train", 8, seed=0)))
    assert images.shape == (8, 128, 128, 3) and images.dtype == tf.float32
    assert sorted(labels) == ["image_info", "masks", "valid_masks"]
    assert labels["masks"].shape == (8, 128, 128, 1) and labels["masks"].dtype == tf.float32
    assert (
        labels["valid_masks"].shape == (8, 128, 128, 1) and labels["valid_masks"].dtype == tf.bool
    )
    assert labels["image_info"].shape == (8, 4, 2)
    masks = labels["masks"].numpy()
    assert set(np.unique(masks)) <= {0, 1, 2, 3, 4, 5, 255}
    np.testing.assert_array_equal(labels["valid_masks"].numpy(), masks != 255)
    assert abs(float(images.numpy().mean())) < 1.5  # normalised


def test_evaluation_reads_every_image_once_then_pads(scenes_dir: str) -> None:
    data = SegmentationInput(data_dir=scenes_dir)
    batch = 8
    batches = -(-VAL // batch) + 1
    examples = [
        (image, mask, valid)
        for images, labels in data.dataset("validation", batch).take(batches)
        for image, mask, valid in zip(
            images.numpy(), labels["masks"].numpy(), labels["valid_masks"].numpy(), strict=True
        )
    ]
    real, padding = examples[:VAL], examples[VAL:]
    seen = Counter(mask[..., 0].astype(np.uint8).tobytes() for _, mask, _ in real)
    expected = Counter(mask.tobytes() for mask in _record_masks(scenes_dir, "validation"))
    assert seen == expected and max(seen.values()) == 1  # each validation image exactly once
    assert len(padding) == batches * batch - VAL
    for image, mask, valid in padding:
        assert (mask == 255).all() and not valid.any() and not image.any()


def test_serving_decode_matches_the_evaluation_parser(scenes_dir: str) -> None:
    data = SegmentationInput(data_dir=scenes_dir, image_size=160)
    record = next(iter(tf.data.TFRecordDataset(data.files("validation")[:1])))
    parsed, labels = data._parse_fn(training=False)(record)
    jpeg = tf.train.Example.FromString(record.numpy()).features.feature["image/encoded"]
    image, info = data.decode_for_serving(tf.constant(jpeg.bytes_list.value[0]))
    np.testing.assert_allclose(image.numpy(), parsed.numpy(), atol=1e-5)
    np.testing.assert_allclose(info.numpy(), labels["image_info"].numpy())
    assert info.numpy()[2].tolist() == [1.25, 1.25]  # 128 -> 160


def _red_blocks(root: Path, count: int) -> None:
    """A VOC folder of 64x48 images of 8 px red or black blocks whose class map is 1 where red
    (void on one block), so a mask aligned with its image equals its thresholded red channel."""
    for folder in (voc.IMAGE_DIR, voc.MASK_DIR, voc.LIST_DIR):
        (root / folder).mkdir(parents=True)
    rng = np.random.default_rng(0)
    ids = [f"img{index}" for index in range(count)]
    for image_id in ids:
        red = np.kron(rng.integers(0, 2, (6, 8)), np.ones((8, 8), np.int64)).astype(np.uint8)
        pixels = np.zeros((48, 64, 3), np.uint8)
        pixels[..., 0] = red * 255
        image = Image.fromarray(pixels)
        image.save(root / voc.IMAGE_DIR / f"{image_id}.jpg", quality=100, subsampling=0)
        classes = red.copy()
        classes[:8, :8] = voc.IGNORE_LABEL
        Image.fromarray(classes).save(root / voc.MASK_DIR / f"{image_id}.png")
    for name in ("train", "val"):
        listed = ids[: count // 2] if name == "train" else ids[count // 2 :]
        (root / voc.LIST_DIR / f"{name}.txt").write_text("\n".join(listed))


@pytest.fixture(scope="module")
def red_blocks(tmp_path_factory) -> str:
    root = tmp_path_factory.mktemp("red_blocks")
    _red_blocks(root, 8)
    voc.convert(str(root), str(root / "records"), ["background", "red"], 1, 1)
    return str(root / "records")


def _red(images: np.ndarray) -> np.ndarray:
    """The red channel of normalised images, back in 0..1."""
    return images[..., 0] * 0.229 + 0.485


def test_flipped_masks_stay_aligned_with_images(red_blocks: str) -> None:
    data = SegmentationInput(data_dir=red_blocks, image_size=64, shuffle_buffer=1)
    images, labels = next(iter(data.dataset("train", 32, seed=1)))
    red, masks = _red(images.numpy()), labels["masks"].numpy()[..., 0]
    valid = labels["valid_masks"].numpy()[..., 0]
    np.testing.assert_array_equal(masks[valid], (red[valid] > 0.5).astype(np.float32))
    assert (masks[:, 48:] == 255).all()  # padding below the 64x48 image
    void_left = (masks[:, :8, :8] == 255).all(axis=(1, 2))
    void_right = (masks[:, :8, 56:] == 255).all(axis=(1, 2))
    assert void_left.any() and void_right.any()  # some flipped, some not
    assert (void_left ^ void_right).all()


def test_scale_jitter_keeps_masks_aligned(red_blocks: str) -> None:
    data = SegmentationInput(
        data_dir=red_blocks, image_size=64, aug_scale_min=0.5, aug_scale_max=2.0
    )
    images, labels = next(iter(data.dataset("train", 16, seed=0)))
    red, masks = _red(images.numpy()), labels["masks"].numpy()[..., 0]
    valid = labels["valid_masks"].numpy()[..., 0]
    agree = masks[valid] == (red[valid] > 0.5)
    assert agree.mean() > 0.9  # bilinear image against nearest mask: block edges may differ


def test_bad_data_is_one_line(scenes_dir: str, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="has value [345], neither a class of .*num_classes = 3"):
        SegmentationInput(data_dir=scenes_dir, num_classes=3).validate()
    with pytest.raises(UsageError, match="need at least 2"):
        SegmentationInput(data_dir=scenes_dir, num_classes=1).validate()
    for path in Path(scenes_dir).glob("*-of-*"):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    (tmp_path / "dataset_info.json").write_text(json.dumps({"num_train_examples": TRAIN}))
    with pytest.raises(UsageError, match="gives no num_classes; convert the data"):
        SegmentationInput(data_dir=str(tmp_path)).validate()
    with pytest.raises(UsageError, match="aug_scale_min <= aug_scale_max"):
        SegmentationInput(aug_scale_min=2.0, aug_scale_max=1.0)
