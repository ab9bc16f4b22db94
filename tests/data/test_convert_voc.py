"""The VOC converter: DeepLab's record schema read back by Model Garden, dataset_info.json, atomic
output, and one-line CLI errors for bad folders."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image
from zoo_testing import run_converter

from models.core import gin_config, registry
from models.core.errors import UsageError
from models.core.recipe import RunSpec
from models.data.convert import voc

# id, list, width, height, PIL mode of the mask (VOC's palette PNGs, or plain grayscale).
IMAGES = [
    ("2007_000032", "train", 40, 30, "P"),
    ("2007_000039", "train", 24, 36, "P"),
    ("2008_000001", "train", 32, 32, "L"),
    ("2009_000010", "val", 28, 20, "P"),
    ("2009_000011", "val", 16, 16, "L"),
]


def class_indices(rng: np.random.Generator, height: int, width: int) -> np.ndarray:
    """A random class map of VOC's 21 classes with a void (255) band."""
    classes = rng.integers(0, 21, (height, width)).astype(np.uint8)
    classes[height // 2, :] = voc.IGNORE_LABEL
    return classes


def write_voc(root: Path, images: list[tuple] = IMAGES) -> dict[str, np.ndarray]:
    """A tiny VOC2012-layout folder of `images` (rows as IMAGES); returns {id: class map}."""
    for folder in (voc.IMAGE_DIR, voc.MASK_DIR, voc.LIST_DIR):
        (root / folder).mkdir(parents=True)
    rng = np.random.default_rng(0)
    maps, lists = {}, {"train": [], "val": []}
    for image_id, split, width, height, mode in images:
        pixels = rng.integers(0, 255, (height, width, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(root / voc.IMAGE_DIR / f"{image_id}.jpg", quality=90)
        maps[image_id] = class_indices(rng, height, width)
        mask = voc.colourize(maps[image_id]) if mode == "P" else Image.fromarray(maps[image_id])
        mask.save(root / voc.MASK_DIR / f"{image_id}.png")
        lists[split].append(image_id)
    for split, ids in lists.items():
        (root / voc.LIST_DIR / f"{split}.txt").write_text("\n".join(ids) + "\n")
    return maps


@pytest.fixture
def voc_dir(tmp_path: Path) -> Path:
    root = tmp_path / "VOC2012"
    write_voc(root)
    return root


def test_records_decode_with_model_garden(voc_dir: Path, tmp_path: Path) -> None:
    from official.vision.dataloaders.segmentation_input import Decoder

    maps = {
        image_id: np.array(Image.open(voc_dir / voc.MASK_DIR / f"{image_id}.png"))
        for image_id, *_ in IMAGES
    }
    out = tmp_path / "out"
    info = voc.convert(str(voc_dir), str(out), train_shards=2, validation_shards=1)
    assert sorted(p.name for p in out.iterdir()) == [
        "dataset_info.json",
        "train-00000-of-00002",
        "train-00001-of-00002",
        "validation-00000-of-00001",
    ]
    decoder = Decoder()
    for split, voc_list in (("train", "train"), ("validation", "val")):
        records = list(tf.data.TFRecordDataset(sorted(map(str, out.glob(f"{split}-*")))))
        expected = [image_id for image_id, listed, *_ in IMAGES if listed == voc_list]
        assert len(records) == len(expected)
        for record, image_id in zip(records, expected, strict=True):
            decoded = decoder.decode(record)
            jpeg = (voc_dir / voc.IMAGE_DIR / f"{image_id}.jpg").read_bytes()
            assert decoded["image/encoded"].numpy() == jpeg  # as-is
            classes = tf.io.decode_image(decoded["image/segmentation/class/encoded"], channels=1)
            np.testing.assert_array_equal(classes.numpy()[..., 0], maps[image_id])  # void kept
            height, width = maps[image_id].shape
            assert (decoded["image/height"], decoded["image/width"]) == (height, width)
            feature = tf.train.Example.FromString(record.numpy()).features.feature
            assert feature["image/format"].bytes_list.value == [b"jpeg"]
            assert feature["image/segmentation/class/format"].bytes_list.value == [b"png"]
            assert feature["image/filename"].bytes_list.value == [image_id.encode()]
    written = json.loads((out / "dataset_info.json").read_text())
    assert written == info
    assert (written["num_classes"], written["classes"]) == (21, list(voc.VOC_CLASSES))
    assert (written["num_train_examples"], written["num_validation_examples"]) == (3, 2)
    assert written["ignore_label"] == 255
    void = sum(int((maps[i] == 255).sum()) for i, split, *_ in IMAGES if split == "val")
    assert written["void_pixels"]["validation"] == void
    assert sum(written["class_pixels"]["train"]) + written["void_pixels"]["train"] == sum(
        w * h for _, split, w, h, _ in IMAGES if split == "train"
    )


def test_converted_folder_evaluates_to_the_numpy_mean_iou(tmp_path: Path) -> None:
    """Convert, read back through the evaluation pipeline (Model Garden's decoder and parser) and
    evaluate a DeepLab: mean IoU is the one numpy computes from the VOC PNGs themselves."""
    images = [("t", "train", 32, 24, "P"), ("v1", "val", 32, 24, "P"), ("v2", "val", 32, 24, "L")]
    write_voc(tmp_path / "VOC2012", images)
    voc.convert(
        str(tmp_path / "VOC2012"), str(tmp_path / "out"), train_shards=1, validation_shards=1
    )
    binding = "segmentation_input.image_size = (24, 32)"  # the images' own size: no resize
    gin_config.parse(["deeplab/default.gin"], [binding], family="deeplab")
    registry.load_all()
    spec = RunSpec().check()
    task = spec.task(model=spec.model, data_dir=str(tmp_path / "out"), seed=0)
    model = task.build_models()["model"]
    inputs, labels = next(iter(task.build_inputs("validation", 2, None)))
    outputs = task.validation_step((inputs, labels), {"model": model}, None, None)
    metrics = task.reduce_aggregated_logs(task.aggregate_logs(None, outputs, None), None)
    logits = tf.image.resize(model(inputs, training=False)["logits"], [24, 32], "bilinear")
    predicted = tf.argmax(logits, axis=-1).numpy().ravel()
    truth = np.concatenate(
        [
            np.array(Image.open(tmp_path / "VOC2012" / voc.MASK_DIR / f"{i}.png"))
            for i in ("v1", "v2")
        ]
    ).ravel()  # palette indices are the class indices
    valid = truth != voc.IGNORE_LABEL
    present = np.union1d(truth[valid], predicted[valid])
    ious = [
        ((truth == c) & (predicted == c) & valid).sum()
        / (((truth == c) | (predicted == c)) & valid).sum()
        for c in present
    ]
    assert metrics["mean_iou"] == pytest.approx(np.mean(ious))
    assert metrics["pixel_accuracy"] == pytest.approx((truth == predicted)[valid].mean())


def test_palette_is_vocs() -> None:
    colours = voc.palette()
    assert colours.shape == (256, 3) and colours.dtype == np.uint8
    assert colours[:4].tolist() == [[0, 0, 0], [128, 0, 0], [0, 128, 0], [128, 128, 0]]
    assert colours[15].tolist() == [192, 128, 128]  # person
    assert colours[255].tolist() == [224, 224, 192]  # void


def test_other_classes_and_converting_into_the_voc_folder(voc_dir: Path) -> None:
    for path in (voc_dir / voc.MASK_DIR).iterdir():
        Image.fromarray((np.array(Image.open(path)) % 3).astype(np.uint8)).save(path)
    info = voc.convert(str(voc_dir), str(voc_dir), ["background", "cat", "dog"], 1, 1)
    assert info["classes"] == ["background", "cat", "dog"] and info["num_classes"] == 3
    assert (voc_dir / "dataset_info.json").is_file()
    assert not [p for p in voc_dir.iterdir() if p.name.startswith(".")]  # no staging left
    with pytest.raises(UsageError, match="already holds dataset_info.json"):
        voc.convert(str(voc_dir), str(voc_dir), ["background", "cat", "dog"])


def test_failure_mid_write_leaves_nothing(voc_dir: Path, tmp_path: Path, monkeypatch) -> None:
    calls = []

    def crash(item):
        calls.append(item)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return original(item)

    original = voc._item_example
    monkeypatch.setattr(voc, "_item_example", crash)
    before = sorted(p.name for p in voc_dir.iterdir())
    for out in (tmp_path / "new", voc_dir):  # a folder made for it, and an existing one
        calls.clear()
        with pytest.raises(KeyboardInterrupt):
            voc.convert(str(voc_dir), str(out), train_shards=3)
        assert not (tmp_path / "new").exists()
        assert sorted(p.name for p in voc_dir.iterdir()) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["VOC2012"]


def test_bad_classes_are_one_line() -> None:
    with pytest.raises(UsageError, match="at least 2 names"):
        voc.check_classes(["background"])
    with pytest.raises(UsageError, match="'cat' more than once"):
        voc.check_classes(["background", "cat", "cat"])


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    """Runs the converter's command line."""
    return run_converter("voc", *args, env=env)


def _spoil_mask(root: Path, image_id: str, change) -> None:
    """Rewrites a mask through change(class map) -> PIL image."""
    path = root / voc.MASK_DIR / f"{image_id}.png"
    change(np.array(Image.open(path))).save(path)


BAD_INPUTS = {
    "missing_mask": (
        lambda root: (root / voc.MASK_DIR / "2009_000010.png").unlink(),
        "class mask",
        "2009_000010.png of id 2009_000010 (val.txt) does not exist",
    ),
    "missing_image": (
        lambda root: (root / voc.IMAGE_DIR / "2007_000039.jpg").unlink(),
        "image",
        "2007_000039.jpg of id 2007_000039 (train.txt) does not exist",
    ),
    "mismatched_size": (
        lambda root: _spoil_mask(root, "2007_000032", lambda m: voc.colourize(m[:, :-2])),
        "class mask",
        "2007_000032.png is 38x30 but its image",
    ),
    "class_out_of_range": (
        lambda root: _spoil_mask(
            root, "2008_000001", lambda m: Image.fromarray(np.where(m == 3, 21, m).astype(np.uint8))
        ),
        "class mask",
        "2008_000001.png has value 21: values must be class indices 0..20 or 255 (void)",
    ),
    "empty_list": (
        lambda root: (root / voc.LIST_DIR / "val.txt").write_text("\n"),
        "",
        "val.txt lists no ids",
    ),
    "rgb_mask": (
        lambda root: _spoil_mask(root, "2009_000011", lambda m: voc.colourize(m).convert("RGB")),
        "class mask",
        "2009_000011.png is a RGB PNG; it must be a palette (P) or grayscale (L) PNG",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_cli_bad_input_is_one_line(voc_dir: Path, tmp_path: Path, cli_env, case: str) -> None:
    spoil, start, message = BAD_INPUTS[case]
    spoil(voc_dir)
    out = tmp_path / "out"
    result = cli(f"--voc_dir={voc_dir}", f"--output_dir={out}", env=cli_env)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {start}"), result.stderr
    assert message in lines[0] and "Traceback" not in result.stderr
    assert not out.exists()
