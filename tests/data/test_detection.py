"""DetectionInput on the built-in digit scenes: Model Garden's parser outputs, every validation
image exactly once before the padding, and the checks before a run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import gin
import pytest

from models.core.errors import UsageError
from models.data.detection import PAD_SOURCE_ID, DetectionInput

SMALL = ["detection_input.image_size = 128", "anchors.max_level = 5"]


@pytest.fixture()
def scenes(digit_scenes_dir: str) -> DetectionInput:
    gin.parse_config(SMALL)
    return DetectionInput(data_dir=digit_scenes_dir)


def test_classes_and_counts_come_from_the_converted_data(scenes: DetectionInput) -> None:
    info = scenes.dataset_info()
    assert scenes.num_classes == max(c["id"] for c in info["categories"]) + 1  # + background
    assert scenes.num_examples("validation") == info["num_validation_examples"]
    assert scenes.annotation_file("validation").endswith("instances_validation.json")


def test_training_batches_carry_anchor_targets_per_level(scenes: DetectionInput) -> None:
    images, labels = next(iter(scenes.dataset("train", 4, seed=0)))
    assert images.shape == (4, 128, 128, 3)
    assert sorted(labels["cls_targets"]) == ["3", "4", "5"]
    anchors = sum(int(v.shape[1] * v.shape[2] * v.shape[3]) for v in labels["cls_targets"].values())
    assert labels["cls_weights"].shape == (4, anchors)
    assert float(labels["box_weights"].numpy().sum()) > 0  # some anchors matched objects


def test_evaluation_reads_every_image_once_then_pads(scenes: DetectionInput) -> None:
    total = scenes.num_examples("validation")
    batches = -(-total // 32) + 1
    ids = [
        int(i)
        for _, labels in scenes.dataset("validation", 32).take(batches)
        for i in labels["groundtruths"]["source_id"].numpy()
    ]
    real = [i for i in ids if i != PAD_SOURCE_ID]
    with open(scenes.annotation_file("validation")) as f:
        expected = sorted(image["id"] for image in json.load(f)["images"])
    assert sorted(real) == expected
    assert ids[len(real) :] == [PAD_SOURCE_ID] * (len(ids) - len(real))


def test_data_without_categories_is_one_line(digit_scenes_dir: str, tmp_path: Path) -> None:
    for path in Path(digit_scenes_dir).glob("*-of-*"):
        shutil.copy(path, tmp_path)
    (tmp_path / "dataset_info.json").write_text("{}")
    gin.parse_config(SMALL)
    with pytest.raises(UsageError, match="lists no categories; convert the data"):
        DetectionInput(data_dir=str(tmp_path)).validate()


def test_an_image_size_the_pyramid_cannot_split_is_one_line() -> None:
    gin.parse_config(["detection_input.image_size = 100", "anchors.max_level = 5"])
    with pytest.raises(UsageError, match="not a multiple of 2\\*\\*anchors.max_level = 32"):
        DetectionInput()
