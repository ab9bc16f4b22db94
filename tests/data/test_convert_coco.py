"""The COCO converter: Model Garden's record schema, the ground-truth copy, one-line CLI errors."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from PIL import Image
from pycocotools import mask as coco_mask
from zoo_testing import run_converter

from models.core.errors import UsageError
from models.data.convert.coco import convert

CATEGORIES = [{"id": 1, "name": "person"}, {"id": 2, "name": "bicycle"}, {"id": 5, "name": "plane"}]
# file name, width, height, PIL mode of the four images (PNG with alpha, grayscale JPEG).
IMAGES = [("a.jpg", 64, 48, "RGB"), ("b.png", 40, 32, "RGBA"), ("c.jpg", 32, 32, "RGB")]
IMAGES += [("d.jpg", 50, 30, "L")]
OBJECT_KEYS = {
    "image/object/bbox/xmin",
    "image/object/bbox/xmax",
    "image/object/bbox/ymin",
    "image/object/bbox/ymax",
    "image/object/class/text",
    "image/object/class/label",
    "image/object/is_crowd",
    "image/object/area",
}
IMAGE_KEYS = {
    "image/encoded",
    "image/format",
    "image/height",
    "image/width",
    "image/filename",
    "image/source_id",
    "image/key/sha256",
}


def polygon_annotation(ann_id: int, image_id: int, category: int, polygons: list, size) -> dict:
    """A non-crowd polygon annotation with the bbox and area COCO would give it."""
    rle = coco_mask.merge(coco_mask.frPyObjects(polygons, *size))
    xs = [v for polygon in polygons for v in polygon[0::2]]
    ys = [v for polygon in polygons for v in polygon[1::2]]
    bbox = [min(xs), min(ys), max(xs) - min(xs), max(ys) - min(ys)]
    return annotation(ann_id, image_id, category, polygons, bbox, rle, 0)


def rle_annotation(ann_id: int, image_id: int, category: int, binary: np.ndarray, crowd: int):
    """An RLE annotation of a binary mask: uncompressed counts for crowds, else compressed."""
    rle = coco_mask.encode(np.asfortranarray(binary.astype(np.uint8)))
    if crowd:
        flat = binary.flatten(order="F")
        runs = np.diff([0, *(np.flatnonzero(np.diff(flat)) + 1), flat.size]).tolist()
        segmentation = {"size": list(binary.shape), "counts": [0] * int(flat[0]) + runs}
    else:
        segmentation = {"size": list(binary.shape), "counts": rle["counts"].decode()}
    return annotation(ann_id, image_id, category, segmentation, coco_mask.toBbox(rle), rle, crowd)


def annotation(ann_id, image_id, category, segmentation, bbox, rle, crowd) -> dict:
    """A COCO annotation entry whose area is its mask's pixel count."""
    return {
        "id": ann_id,
        "image_id": image_id,
        "category_id": category,
        "iscrowd": crowd,
        "segmentation": segmentation,
        "bbox": [float(v) for v in bbox],
        "area": float(coco_mask.area(rle)),
    }


def instances() -> dict:
    """COCO instances JSON of the four images: polygons (one of two parts), a crowd RLE, a
    compressed RLE, and an image without annotations."""
    block = np.zeros((32, 40), np.uint8)
    block[20:30, 5:25] = 1
    blob = np.zeros((30, 50), np.uint8)
    blob[3:12, 30:47] = 1
    entries = [
        polygon_annotation(101, 1, 1, [[4, 4, 30, 4, 30, 20, 4, 20]], (48, 64)),
        polygon_annotation(
            102, 1, 5, [[40, 10, 60, 10, 50, 40], [34, 30, 38, 30, 38, 44]], (48, 64)
        ),
        polygon_annotation(201, 2, 2, [[2, 2, 20, 2, 11, 15]], (32, 40)),
        rle_annotation(202, 2, 1, block, crowd=1),
        rle_annotation(401, 4, 5, blob, crowd=0),
    ]
    images = [
        {"id": index, "file_name": name, "width": width, "height": height}
        for index, (name, width, height, _) in enumerate(IMAGES, start=1)
    ]
    return {
        "info": {"description": "tiny"},
        "images": images,
        "annotations": entries,
        "categories": CATEGORIES,
    }


@pytest.fixture
def coco(tmp_path: Path) -> tuple[Path, Path]:
    """(image folder, instances JSON) of a tiny COCO layout."""
    images = tmp_path / "train"
    images.mkdir()
    rng = np.random.default_rng(0)
    for name, width, height, mode in IMAGES:
        pixels = rng.integers(0, 255, (height, width, 3), dtype=np.uint8)
        Image.fromarray(pixels).convert(mode).save(images / name)
    annotations = tmp_path / "annotations" / "instances_train.json"
    annotations.parent.mkdir()
    annotations.write_text(json.dumps(instances()))
    return images, annotations


def decoded_records(output_dir: Path, split: str = "train") -> dict[str, dict]:
    """{source id: Model Garden's decoding with masks} of every record of a split."""
    from official.vision.dataloaders.tf_example_decoder import TfExampleDecoder

    decoder = TfExampleDecoder(include_mask=True)
    records = {}
    for record in tf.data.TFRecordDataset(sorted(map(str, output_dir.glob(f"{split}-*")))):
        decoded = {k: v.numpy() for k, v in decoder.decode(record).items()}
        decoded["example"] = tf.train.Example.FromString(record.numpy())
        records[decoded["source_id"].decode()] = decoded
    return records


def test_records_decode_with_model_garden(coco, tmp_path):
    images, annotations = coco
    convert(str(images), str(annotations), str(tmp_path / "out"), num_shards=2)
    records = decoded_records(tmp_path / "out")
    truth = json.loads(annotations.read_text())
    assert sorted(records) == ["1", "2", "3", "4"]
    for image in truth["images"]:
        record = records[str(image["id"])]
        objects = [a for a in truth["annotations"] if a["image_id"] == image["id"]]
        height, width = image["height"], image["width"]
        assert (record["height"], record["width"]) == (height, width)
        assert record["image"].shape == (height, width, 3)
        boxes = record["groundtruth_boxes"] * [height, width, height, width]
        expected = [[y, x, y + h, x + w] for x, y, w, h in (a["bbox"] for a in objects)]
        np.testing.assert_allclose(boxes.reshape(-1, 4), np.reshape(expected, (-1, 4)), atol=1e-3)
        assert record["groundtruth_classes"].tolist() == [a["category_id"] for a in objects]
        assert record["groundtruth_is_crowd"].tolist() == [bool(a["iscrowd"]) for a in objects]
        np.testing.assert_allclose(record["groundtruth_area"], [a["area"] for a in objects])
        masks = record["groundtruth_instance_masks"]
        assert masks.shape == (len(objects), height, width)
        for instance, entry in zip(masks, objects, strict=True):
            assert set(np.unique(instance)) <= {0.0, 1.0}
            assert abs(instance.sum() - entry["area"]) <= max(2, 0.05 * entry["area"])
        example = record["example"].features.feature
        keys = IMAGE_KEYS | (OBJECT_KEYS | {"image/object/mask"} if objects else set())
        assert set(example) == keys
        names = {c["id"]: c["name"].encode() for c in CATEGORIES}
        assert list(example["image/object/class/text"].bytes_list.value) == [
            names[a["category_id"]] for a in objects
        ]
        encoded = example["image/encoded"].bytes_list.value[0]
        assert encoded[:2] == b"\xff\xd8"  # PNG and grayscale are re-encoded to RGB JPEG
        assert example["image/key/sha256"].bytes_list.value[0] == (
            hashlib.sha256(encoded).hexdigest().encode()
        )
        assert example["image/format"].bytes_list.value[0] == b"jpg"
        assert example["image/filename"].bytes_list.value[0] == image["file_name"].encode()


def test_output_layout_info_and_ground_truth(coco, tmp_path):
    from pycocotools.coco import COCO

    images, annotations = coco
    out = tmp_path / "out"
    info = convert(str(images), str(annotations), str(out), num_shards=2, split="val2017")
    assert sorted(p.name for p in out.iterdir()) == [
        "dataset_info.json",
        "instances_val2017.json",
        "val2017-00000-of-00002",
        "val2017-00001-of-00002",
    ]
    written = json.loads((out / "dataset_info.json").read_text())
    assert written == {"num_classes": 5, "categories": CATEGORIES, "num_val2017_examples": 4}
    assert info == {**written, "skipped_annotations": 0}
    assert (out / "instances_val2017.json").read_bytes() == annotations.read_bytes()
    ground_truth = COCO(str(out / "instances_val2017.json"))
    assert sorted(ground_truth.getImgIds()) == [1, 2, 3, 4]
    assert len(ground_truth.getAnnIds(iscrowd=True)) == 1


def test_second_split_merges_into_dataset_info(coco, tmp_path):
    images, annotations = coco
    out = tmp_path / "out"
    convert(str(images), str(annotations), str(out), num_shards=1, include_masks=False)
    data = json.loads(annotations.read_text())
    data["images"] = data["images"][:2]
    data["annotations"] = [a for a in data["annotations"] if a["image_id"] <= 2]
    val = tmp_path / "instances_val.json"
    val.write_text(json.dumps(data))
    info = convert(str(images), str(val), str(out), split="val", num_shards=1)
    assert (info["num_train_examples"], info["num_val_examples"]) == (4, 2)
    assert json.loads((out / "dataset_info.json").read_text())["num_val_examples"] == 2
    records = decoded_records(out, "train")
    assert "image/object/mask" not in records["1"]["example"].features.feature
    data["categories"] = CATEGORIES[:2] + [{"id": 5, "name": "airplane"}]
    val.write_text(json.dumps(data))
    with pytest.raises(UsageError, match="categories of --annotations differ"):
        convert(str(images), str(val), str(out), split="test")
    with pytest.raises(UsageError, match="already holds val shards"):
        convert(str(images), str(annotations), str(out), split="val")


def test_degenerate_boxes_skipped_and_overhang_clipped(coco, tmp_path):
    images, annotations = coco
    data = json.loads(annotations.read_text())
    data["annotations"][0]["bbox"] = [4.0, 4.0, 0.0, 16.0]  # zero width: left out
    data["annotations"][1]["bbox"] = [34.0, 10.0, 30.6, 34.0]  # 0.6 px past the right edge
    annotations.write_text(json.dumps(data))
    info = convert(str(images), str(annotations), str(tmp_path / "out"), num_shards=1)
    assert info["skipped_annotations"] == 1
    record = decoded_records(tmp_path / "out")["1"]
    assert record["groundtruth_classes"].tolist() == [5]
    np.testing.assert_allclose(record["groundtruth_boxes"][0][3], 1.0)


def test_image_failing_mid_write_leaves_no_shards(coco, tmp_path):
    images, annotations = coco
    whole = (images / "d.jpg").read_bytes()
    Image.open(images / "d.jpg").convert("RGB").save(images / "d.jpg", format="PNG")
    (images / "d.jpg").write_bytes((images / "d.jpg").read_bytes()[:200])  # header intact
    out = tmp_path / "out"
    with pytest.raises(UsageError, match="d.jpg"):
        convert(str(images), str(annotations), str(out), num_shards=4)
    assert list(out.iterdir()) == []
    (images / "d.jpg").write_bytes(whole)
    convert(str(images), str(annotations), str(out), num_shards=4)
    assert len(list(out.glob("train-*-of-00004"))) == 4


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    """Runs the converter's command line."""
    return run_converter("coco", *args, env=env)


def _set(path: Path, change) -> None:
    """Applies change to the annotation JSON at path."""
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def _annotation(data: dict, ann_id: int) -> dict:
    return next(a for a in data["annotations"] if a["id"] == ann_id)


BAD_INPUTS = {
    "malformed_json": (
        lambda images, ann: ann.write_text('{"images": [\n  {"id": 1,}\n]}'),
        "is not valid JSON: line 2 column",
    ),
    "lacks_categories": (
        lambda images, ann: _set(ann, lambda d: d.pop("categories")),
        "lacks categories",
    ),
    "missing_image": (lambda images, ann: (images / "c.jpg").unlink(), "c.jpg"),
    "unreadable_image": (
        lambda images, ann: (images / "a.jpg").write_bytes(b"not an image"),
        "a.jpg: not a JPEG or PNG",
    ),
    "gif_image": (
        lambda images, ann: Image.new("RGB", (64, 48)).save(images / "a.jpg", format="GIF"),
        "it is GIF, not a JPEG or PNG",
    ),
    "box_outside": (
        lambda images, ann: _set(ann, lambda d: _annotation(d, 101).update(bbox=[50, 4, 30, 16])),
        "annotation 101 (image a.jpg) has bbox [50, 4, 30, 16] outside its 64x48 image",
    ),
    "unknown_category": (
        lambda images, ann: _set(ann, lambda d: _annotation(d, 201).update(category_id=7)),
        "annotation 201 (image b.png) has category_id 7 that is not in categories",
    ),
    "unknown_image": (
        lambda images, ann: _set(ann, lambda d: _annotation(d, 401).update(image_id=99)),
        "annotation 401 has image_id 99 that is not in images",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_cli_bad_input_is_one_line(coco, tmp_path, cli_env, case):
    images, annotations = coco
    spoil, message = BAD_INPUTS[case]
    spoil(images, annotations)
    out = tmp_path / "out"
    result = cli(
        f"--image_dir={images}", f"--annotations={annotations}", f"--output_dir={out}", env=cli_env
    )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert message in lines[0] and "Traceback" not in result.stderr
    assert not out.exists()


def test_cli_output_inside_image_dir(coco, cli_env):
    images, annotations = coco
    out = images / "records"
    result = cli(
        f"--image_dir={images}", f"--annotations={annotations}", f"--output_dir={out}", env=cli_env
    )
    assert result.returncode == 2 and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("error: --output_dir") and "inside --image_dir" in result.stderr
    assert not out.exists()


@pytest.mark.slow  # ~10-14 s on 2 cores: the good run imports TensorFlow and Model Garden
def test_cli_converts_after_a_bad_input(coco, tmp_path, cli_env):
    images, annotations = coco
    good = annotations.read_text()
    _set(annotations, lambda d: _annotation(d, 202).update(image_id=77))
    out = tmp_path / "out"
    args = [f"--image_dir={images}", f"--annotations={annotations}", f"--output_dir={out}"]
    assert cli(*args, env=cli_env).returncode == 2
    annotations.write_text(good)
    result = cli(*args, "--split=train", "--num_shards=3", "--include_masks=true", env=cli_env)
    assert result.returncode == 0, result.stderr
    assert "wrote 4 train examples" in result.stdout
    assert sorted(p.name for p in out.iterdir()) == [
        "dataset_info.json",
        "instances_train.json",
        "train-00000-of-00003",
        "train-00001-of-00003",
        "train-00002-of-00003",
    ]
    assert len(decoded_records(out)) == 4


MORE_BAD_ANNOTATIONS = {
    "wrong_image_size": (lambda d: d["images"][0].update(width=65), "a.jpg is 64x48 but"),
    "rle_size": (
        lambda d: _annotation(d, 202)["segmentation"].update(size=[40, 32]),
        "annotation 202 (image b.png) has an RLE segmentation of size [40, 32]",
    ),
    "odd_polygon": (
        lambda d: _annotation(d, 201)["segmentation"][0].append(3),
        "annotation 201 (image b.png) has a polygon with an odd number",
    ),
    "no_segmentation": (
        lambda d: _annotation(d, 101).pop("segmentation"),
        "annotation 101 (image a.jpg) lacks segmentation",
    ),
    "crowd_flag": (lambda d: _annotation(d, 101).update(iscrowd=2), "has iscrowd 2, not 0 or 1"),
    "twice": (lambda d: _annotation(d, 102).update(id=101), "annotation 101 (image a.jpg) appears"),
    "category_zero": (lambda d: d["categories"][0].update(id=0), "category id 0 is below 1"),
}


@pytest.mark.parametrize("case", sorted(MORE_BAD_ANNOTATIONS))
def test_more_bad_annotations_are_refused_before_writing(coco, tmp_path, case):
    images, annotations = coco
    change, message = MORE_BAD_ANNOTATIONS[case]
    _set(annotations, change)
    with pytest.raises(UsageError) as error:
        convert(str(images), str(annotations), str(tmp_path / "out"))
    assert message in str(error.value) and "\n" not in str(error.value)
    assert not (tmp_path / "out").exists()
