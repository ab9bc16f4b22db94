"""The built-in digit scenes: COCO layout and annotations, occlusion, determinism, TFRecords."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from models.data import builtin
from models.data.builtin import cache, digit_scenes

TRAIN, VAL = 20, 10
COUNTS = {"train": TRAIN, "val": VAL}


def _converter_missing() -> bool:
    """Whether models.data.convert.coco (written separately) is not there yet."""
    return importlib.util.find_spec("models.data.convert.coco") is None


needs_converter = pytest.mark.skipif(
    _converter_missing(), reason="models.data.convert.coco not written yet"
)


@pytest.fixture(scope="module")
def scenes(tmp_path_factory) -> Path:
    """A small COCO-layout version (20 train, 10 val scenes, seed 0)."""
    directory = tmp_path_factory.mktemp("scenes")
    digit_scenes.write_coco(directory, TRAIN, VAL, seed=0)
    return directory


def _coco(directory: Path, split: str):
    """The split's annotations loaded by pycocotools (its index printing silenced)."""
    from pycocotools.coco import COCO

    with contextlib.redirect_stdout(io.StringIO()):
        return COCO(str(directory / "annotations" / f"instances_{split}.json"))


def _files(directory: Path) -> dict[str, bytes]:
    """Every file under directory by relative path, with its bytes."""
    return {
        str(p.relative_to(directory)): p.read_bytes() for p in directory.rglob("*") if p.is_file()
    }


def test_layout_and_counts(scenes: Path) -> None:
    assert sorted(p.name for p in (scenes / "annotations").iterdir()) == [
        "instances_train.json",
        "instances_val.json",
    ]
    for split, count in COUNTS.items():
        coco = _coco(scenes, split)
        names = sorted(p.name for p in (scenes / "images" / split).iterdir())
        assert names == sorted(image["file_name"] for image in coco.dataset["images"])
        assert sorted(coco.getImgIds()) == list(range(1, count + 1))
        assert coco.dataset["categories"] == digit_scenes.CATEGORIES
        assert [c["id"] for c in digit_scenes.CATEGORIES] == list(range(1, 6))
        per_image = [len(coco.getAnnIds(imgIds=i)) for i in coco.getImgIds()]
        assert 1 <= min(per_image) and max(per_image) <= digit_scenes.MAX_OBJECTS


def test_images_are_128_rgb_jpegs(scenes: Path) -> None:
    for split in COUNTS:
        for image in _coco(scenes, split).dataset["images"]:
            with Image.open(scenes / "images" / split / image["file_name"]) as jpeg:
                assert (jpeg.format, jpeg.mode, jpeg.size) == ("JPEG", "RGB", (128, 128))
            assert image["height"] == image["width"] == 128


def test_masks_match_area_and_lie_in_tight_boxes(scenes: Path) -> None:
    for split in COUNTS:
        coco = _coco(scenes, split)
        for ann in coco.dataset["annotations"]:
            mask = coco.annToMask(ann).astype(bool)
            x, y, w, h = ann["bbox"]
            assert 0 <= x and 0 <= y and x + w <= 128 and y + h <= 128 and w > 0 and h > 0
            assert mask.sum() == ann["area"] > 0
            assert mask[y : y + h, x : x + w].sum() == ann["area"]  # Inside the box...
            rows, cols = np.flatnonzero(mask.any(1)), np.flatnonzero(mask.any(0))
            assert [cols[0], rows[0], cols[-1] + 1 - x, rows[-1] + 1 - y] == [x, y, w, h]
            assert ann["iscrowd"] == 0 and ann["category_id"] in range(1, 6)
            assert isinstance(ann["segmentation"], list)  # Polygons (RLE only as fallback).
            assert all(len(p) >= 6 and len(p) % 2 == 0 for p in ann["segmentation"])


def test_objects_of_one_image_never_share_pixels(scenes: Path) -> None:
    for split in COUNTS:
        coco = _coco(scenes, split)
        for image_id in coco.getImgIds():
            masks = [coco.annToMask(a) for a in coco.loadAnns(coco.getAnnIds(imgIds=image_id))]
            assert np.sum(masks, axis=0).max() == 1


def test_occluded_objects_keep_their_visible_part() -> None:
    digits = digit_scenes.split_digits(0)["train"]
    photos = digit_scenes.photographs()
    occluded = 0
    for index in range(60):
        rng = np.random.default_rng([7, index])
        scene, objects = digit_scenes.compose(rng, digits, photos)
        assert scene.shape == (128, 128, 3) and scene.dtype == np.uint8
        masks = [mask for _, mask in objects]
        assert np.sum(masks, axis=0).max() <= 1 and all(m.any() for m in masks)
        assert all(np.array_equal(digit_scenes.solid(m), m) for m in masks)  # No holes.
        occluded += sum(len(digit_scenes.polygons_of(m)) > 1 for m in masks)
    assert occluded > 0  # Some objects are cut in pieces by the ones pasted later.


def test_split_digits_are_disjoint_and_stratified() -> None:
    split = digit_scenes.split_digits(0)
    train, val = ({d.index for d in split[s]} for s in ("train", "val"))
    assert not train & val and len(train) + len(val) == 897  # 178 + 177 + 181 + 182 + 179.
    assert 0.19 < len(val) / 897 < 0.21
    for digits in split.values():
        counts = np.bincount([d.category_id for d in digits], minlength=6)[1:]
        assert counts.min() >= 0.9 * counts.max()


def test_same_seed_same_bytes(scenes: Path, tmp_path: Path) -> None:
    digit_scenes.write_coco(tmp_path / "again", TRAIN, VAL, seed=0)
    assert _files(tmp_path / "again") == _files(scenes)
    digit_scenes.write_coco(tmp_path / "other", 3, 1, seed=1)
    first = "images/train/000000000001.jpg"
    assert _files(tmp_path / "other")[first] != _files(scenes)[first]


@needs_converter
def test_records_decode_with_model_garden(scenes: Path, read_examples) -> None:
    from official.vision.dataloaders.tf_example_decoder import TfExampleDecoder

    digit_scenes.write_records(scenes)
    decoder = TfExampleDecoder(include_mask=True)
    for split, name in digit_scenes.SPLITS.items():
        shards = sorted(str(p) for p in scenes.glob(f"{name}-*-of-*"))
        assert len(shards) == digit_scenes.SHARDS[split]
        coco = _coco(scenes, split)
        examples = read_examples(shards)
        assert len(examples) == COUNTS[split]
        for example in examples:
            _check_decoded(decoder.decode(example.SerializeToString()), coco)
    assert (scenes / "dataset_info.json").is_file()


def _check_decoded(decoded: dict, coco) -> None:
    """One decoded record agrees with its image's COCO annotations (boxes, classes, masks)."""
    image = decoded["image"].numpy()
    assert image.shape == (128, 128, 3)
    anns = _annotations_of(decoded, coco)
    boxes = decoded["groundtruth_boxes"].numpy() * 128  # ymin, xmin, ymax, xmax normalised
    expected = [[y, x, y + h, x + w] for x, y, w, h in (a["bbox"] for a in anns)]
    np.testing.assert_allclose(boxes, expected, atol=1e-3)
    assert decoded["groundtruth_classes"].numpy().tolist() == [a["category_id"] for a in anns]
    masks = decoded["groundtruth_instance_masks"].numpy() > 0.5
    assert masks.sum(axis=(1, 2)).tolist() == [a["area"] for a in anns]


def _annotations_of(decoded: dict, coco) -> list[dict]:
    """The COCO annotations of the decoded record's image, found by its source id or file."""
    source = decoded["source_id"].numpy().decode()
    by_id = {str(i["id"]): i["id"] for i in coco.dataset["images"]}
    by_name = {Path(i["file_name"]).stem: i["id"] for i in coco.dataset["images"]}
    image_id = by_id.get(source, by_name.get(source))
    assert image_id is not None, source
    return coco.loadAnns(coco.getAnnIds(imgIds=image_id))


@needs_converter
def test_prepare_is_cached_atomic_and_registered(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(digit_scenes, "TRAIN_SCENES", 4)
    monkeypatch.setattr(digit_scenes, "VAL_SCENES", 2)
    monkeypatch.setenv("ZOO_CACHE_DIR", str(tmp_path))
    directory = builtin.prepare("digit_scenes")
    assert Path(directory) == tmp_path / digit_scenes.NAME
    assert sorted(p.name for p in tmp_path.iterdir()) == [cache.LOCKS, digit_scenes.NAME]
    names = {p.name for p in Path(directory).iterdir()}
    assert {"images", "annotations", "dataset_info.json"} <= names
    assert any(n.startswith("train-") for n in names) and any(
        n.startswith("validation-") for n in names
    )
    before = _files(Path(directory))
    assert builtin.prepare("digit_scenes") == directory  # Second call reuses the files.
    staging = tmp_path / ".staging"
    staging.mkdir()
    cache._publish(staging, Path(directory))  # Losing a race to another writer is fine.
    staging.rmdir()
    assert sorted(p.name for p in tmp_path.iterdir()) == [cache.LOCKS, digit_scenes.NAME]
    assert _files(Path(directory)) == before


def test_interrupted_write_leaves_nothing(tmp_path: Path, monkeypatch) -> None:
    def crash(directory: Path, *args) -> None:
        (directory / "annotations").mkdir()
        raise KeyboardInterrupt

    monkeypatch.setattr(digit_scenes, "write", crash)
    with pytest.raises(KeyboardInterrupt):
        digit_scenes.prepare(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == [cache.LOCKS]  # no dataset, half or whole


def test_annotations_are_plain_json(scenes: Path) -> None:
    data = json.loads((scenes / "annotations" / "instances_val.json").read_text())
    assert set(data) == {"info", "licenses", "images", "annotations", "categories"}
    assert [a["id"] for a in data["annotations"]] == list(range(1, len(data["annotations"]) + 1))
