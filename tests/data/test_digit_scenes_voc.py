"""The built-in VOC-layout digit scenes: layout, class maps (classes, void ring), the same scenes
as the COCO-layout set, and registration as a cached built-in."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from models.data import builtin
from models.data.builtin import cache, digit_scenes, digit_scenes_voc
from models.data.convert import voc

TRAIN, VAL = 30, 20


@pytest.fixture(scope="module")
def scenes(tmp_path_factory) -> Path:
    """A small VOC layout (30 train, 20 val scenes, seed 0), without records."""
    directory = tmp_path_factory.mktemp("scenes_voc")
    digit_scenes_voc.write_voc(directory, TRAIN, VAL, seed=0)
    return directory


def _masks(directory: Path, split: str) -> dict[str, np.ndarray]:
    """{id: class map} of a VOC list, read from the palette PNGs."""
    ids = (directory / voc.LIST_DIR / f"{split}.txt").read_text().split()
    masks = {}
    for image_id in ids:
        with Image.open(directory / voc.MASK_DIR / f"{image_id}.png") as png:
            assert png.mode == "P"
            assert png.getpalette()[: 3 * 256] == voc.palette().ravel().tolist()
            masks[image_id] = np.array(png)
    return masks


def test_layout(scenes: Path) -> None:
    for split, count in (("train", TRAIN), ("val", VAL)):
        masks = _masks(scenes, split)
        assert len(masks) == count and all(i.startswith(f"{split}_") for i in masks)
        for image_id, mask in masks.items():
            with Image.open(scenes / voc.IMAGE_DIR / f"{image_id}.jpg") as jpeg:
                assert (jpeg.format, jpeg.mode, jpeg.size) == ("JPEG", "RGB", (128, 128))
            assert mask.shape == (128, 128)


def test_every_class_appears_with_a_void_ring(scenes: Path) -> None:
    masks = np.stack(list(_masks(scenes, "val").values()))
    assert set(np.unique(masks)) == {0, 1, 2, 3, 4, 5, 255}  # every class, and void
    for mask in masks:
        objects = (mask != 0) & (mask != 255)
        assert objects.any() and (mask == 255).any()
        # Void lies only around objects (1 px out, 2 px where the void of an occluded object
        # meets that of the one above it), and no object pixel touches the background.
        assert _near(objects, 2)[mask == 255].all()
        assert not (_near(mask == 0, 1) & objects)[1:-1, 1:-1].any()


def _near(pixels: np.ndarray, distance: int) -> np.ndarray:
    """Pixels within distance (Chebyshev) of one of pixels."""
    near = np.zeros_like(pixels)
    for dy in range(-distance, distance + 1):
        for dx in range(-distance, distance + 1):
            near |= np.roll(pixels, (dy, dx), axis=(0, 1))
    return near


def test_class_maps_label_the_coco_scenes_objects() -> None:
    digits = digit_scenes.split_digits(0)["val"]
    photos = digit_scenes.photographs()
    for _, objects in digit_scenes.scenes(10, digits, photos, seed=0, split_index=1):
        classes = digit_scenes_voc.class_map(objects)
        for category, mask in objects:
            labelled = classes[mask]
            assert set(np.unique(labelled)) <= {category, 255}
            assert (labelled == category).mean() > 0.5  # only where a later object touches it
        assert (classes[~np.any([m for _, m in objects], axis=0)] != 255).mean() > 0.8


def test_same_scenes_as_the_coco_set(scenes: Path, tmp_path: Path) -> None:
    digit_scenes.write_coco(tmp_path, 3, 2, seed=0)
    for split in ("train", "val"):
        for index in (1, 2):
            coco = (tmp_path / "images" / split / f"{index:012d}.jpg").read_bytes()
            ours = (scenes / voc.IMAGE_DIR / f"{split}_{index:06d}.jpg").read_bytes()
            assert coco == ours


def test_prepare_is_cached_converted_and_registered(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(digit_scenes_voc, "TRAIN_SCENES", 6)
    monkeypatch.setattr(digit_scenes_voc, "VAL_SCENES", 3)
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path))
    directory = Path(builtin.prepare("digit_scenes_voc"))
    assert directory == tmp_path / digit_scenes_voc.NAME
    assert sorted(p.name for p in tmp_path.iterdir()) == [cache.LOCKS, digit_scenes_voc.NAME]
    assert sorted(p.name for p in directory.iterdir()) == [
        "ImageSets",
        "JPEGImages",
        "SegmentationClass",
        "dataset_info.json",
        *(f"train-{i:05d}-of-00004" for i in range(4)),
        *(f"validation-{i:05d}-of-00002" for i in range(2)),
    ]
    info = json.loads((directory / "dataset_info.json").read_text())
    assert info["classes"] == ["background", "0", "2", "4", "5", "7"]
    assert (info["num_classes"], info["ignore_label"]) == (6, 255)
    assert (info["num_train_examples"], info["num_validation_examples"]) == (6, 3)
    assert builtin.prepare("digit_scenes_voc") == str(directory)  # reused
