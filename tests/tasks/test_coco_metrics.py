"""CocoMetrics: COCO box and mask AP through Model Garden's evaluator on a tiny ground truth
written here, from a JSON file or from ground truth dicts, quiet on stdout."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest
from pycocotools import mask as mask_api

from models.tasks.coco_metrics import (
    BOX_METRIC_NAMES,
    MASK_METRIC_NAMES,
    METRIC_RANGES,
    NO_GROUND_TRUTH,
    CocoMetrics,
)

#: Image id -> (height, width).
IMAGES = {1: (200, 240), 2: (160, 200), 3: (120, 120)}
CATEGORIES = {1: "cat", 2: "dog", 3: "traffic light", 4: "unused"}
#: (image id, category id, polygon [x, y, ...], iscrowd); medium and large objects only.
OBJECTS = [
    (1, 1, [20, 30, 80, 30, 80, 80, 20, 80], 0),
    (1, 2, [100, 10, 230, 10, 165, 190], 0),
    (1, 1, [10, 120, 70, 120, 70, 190, 10, 190], 1),
    (2, 1, [30, 20, 150, 20, 150, 130, 30, 130], 0),
    (2, 3, [60, 100, 110, 100, 120, 130, 85, 155, 50, 130], 0),
    (2, 2, [150, 100, 195, 100, 195, 150, 150, 150], 0),
    (3, 3, [10, 10, 100, 10, 100, 60, 10, 60], 0),
]
#: Resolution of the box-relative predicted masks (a mask head's output).
MASK_SIZE = 64


def _annotations(objects=OBJECTS) -> list[dict]:
    """COCO annotations with RLE-derived bbox and area of each polygon."""
    annotations = []
    for index, (image, category, polygon, crowd) in enumerate(objects, start=1):
        height, width = IMAGES[image]
        rle = mask_api.merge(mask_api.frPyObjects([polygon], height, width))
        annotations.append(
            {
                "id": index,
                "image_id": image,
                "category_id": category,
                "segmentation": [polygon],
                "bbox": [float(v) for v in mask_api.toBbox(rle)],
                "area": float(mask_api.area(rle)),
                "iscrowd": crowd,
                "mask": mask_api.decode(rle),
            }
        )
    return annotations


def _write_json(path: Path, annotations: list[dict], images=IMAGES) -> str:
    """The COCO JSON file of `annotations` (without their decoded masks)."""
    dataset = {
        "images": [{"id": i, "height": h, "width": w} for i, (h, w) in images.items()],
        "categories": [{"id": i, "name": n} for i, n in CATEGORIES.items()],
        "annotations": [{k: v for k, v in a.items() if k != "mask"} for a in annotations],
    }
    path.write_text(json.dumps(dataset))
    return str(path)


@pytest.fixture
def annotations() -> list[dict]:
    """The tiny ground truth, with each instance's decoded mask."""
    return _annotations()


@pytest.fixture
def annotation_file(tmp_path: Path, annotations: list[dict]) -> str:
    """The tiny ground truth as a COCO JSON file."""
    return _write_json(tmp_path / "instances.json", annotations)


def _yxyx(bbox: list[float]) -> list[float]:
    """COCO [x, y, w, h] as Model Garden's [ymin, xmin, ymax, xmax]."""
    x, y, w, h = bbox
    return [y, x, y + h, x + w]


def _box_mask(mask: np.ndarray, yxyx: list[float]) -> np.ndarray:
    """The image mask cropped to the box and resized: what a mask head predicts."""
    y0, x0, y1, x1 = (int(round(v)) for v in yxyx)
    crop = mask[y0:y1, x0:x1].astype(np.float32)
    return cv2.resize(crop, (MASK_SIZE, MASK_SIZE), interpolation=cv2.INTER_LINEAR)


def _detections(annotations: list[dict], image: int) -> list[tuple]:
    """(yxyx box, class, score, box-relative mask) equal to the image's ground truth."""
    found = [a for a in annotations if a["image_id"] == image]
    boxes = [_yxyx(a["bbox"]) for a in found]
    return [
        (box, a["category_id"], 1.0, _box_mask(a["mask"], box))
        for box, a in zip(boxes, found, strict=True)
    ]


def _predictions(per_image: dict[int, list[tuple]], slots: int) -> dict[str, np.ndarray]:
    """One batch of predictions; padding slots hold a top-scored class-1 box, to be ignored."""
    batch = len(per_image)
    boxes = np.tile(np.array([0.0, 0.0, 50.0, 50.0], np.float32), (batch, slots, 1))
    classes = np.ones((batch, slots), np.float32)
    scores = np.full((batch, slots), 5.0, np.float32)
    masks = np.ones((batch, slots, MASK_SIZE, MASK_SIZE), np.float32)
    info = np.zeros((batch, 4, 2), np.float32)
    for j, (image, detections) in enumerate(per_image.items()):
        info[j, 0], info[j, 2] = IMAGES[image], (1.0, 1.0)
        for k, (box, category, score, mask) in enumerate(detections):
            boxes[j, k], classes[j, k], scores[j, k] = box, category, score
            masks[j, k] = mask
    return {
        "source_id": np.array([str(i).encode() for i in per_image]),
        "image_info": info,
        "num_detections": np.array([len(d) for d in per_image.values()], np.int32),
        "detection_boxes": boxes,
        "detection_classes": classes,
        "detection_scores": scores,
        "detection_masks": masks,
    }


def _groundtruths(annotations: list[dict], images: list[int], slots: int) -> dict:
    """One batch of ground truth dicts (binary image masks) for `images`."""
    batch, height, width = len(images), 200, 240
    gt = {
        "source_id": np.array(images, np.int64),
        "height": np.array([IMAGES[i][0] for i in images], np.int32),
        "width": np.array([IMAGES[i][1] for i in images], np.int32),
        "num_detections": np.zeros(batch, np.int32),
        "boxes": np.zeros((batch, slots, 4), np.float32),
        "classes": np.zeros((batch, slots), np.int32),
        "areas": np.zeros((batch, slots), np.float32),
        "is_crowds": np.zeros((batch, slots), bool),
        "masks": np.zeros((batch, slots, height, width), np.uint8),
    }
    for j, image in enumerate(images):
        for k, a in enumerate(a for a in annotations if a["image_id"] == image):
            h, w = a["mask"].shape
            gt["boxes"][j, k], gt["classes"][j, k] = _yxyx(a["bbox"]), a["category_id"]
            gt["areas"][j, k], gt["is_crowds"][j, k] = a["area"], a["iscrowd"]
            gt["masks"][j, k, :h, :w] = a["mask"]
            gt["num_detections"][j] = k + 1
    return gt


def _evaluate(metrics: CocoMetrics, annotations: list[dict], detections: dict) -> dict:
    """Feeds images 1-2 as one batch (5 slots) and image 3 as another (3 slots)."""
    for images, slots in (([1, 2], 5), ([3], 3)):
        per_image = {i: detections[i] for i in images}
        metrics.update(_groundtruths(annotations, images, 4), _predictions(per_image, slots))
    return metrics.result()


def _perfect(annotations: list[dict]) -> dict[int, list[tuple]]:
    """Every image's ground truth (the crowd region too) as score-1 detections."""
    return {i: _detections(annotations, i) for i in IMAGES}


def _perturbed(annotations: list[dict]) -> dict[int, list[tuple]]:
    """Every box shifted by 6 px (masks with them), image 3's object given the wrong class."""
    detections = _perfect(annotations)
    for image, found in detections.items():
        detections[image] = [([v + 6 for v in b], c, s, m) for b, c, s, m in found]
    box, _, score, mask = detections[3][0]
    detections[3][0] = (box, 1, score, mask)
    return detections


def test_perfect_predictions_give_ap_one_for_boxes_and_masks(annotation_file, annotations):
    result = _evaluate(
        CocoMetrics(annotation_file, include_mask=True), annotations, _perfect(annotations)
    )
    assert set(result) == set(BOX_METRIC_NAMES + MASK_METRIC_NAMES)
    for name in ("AP", "AP50", "AP75", "APm", "APl", "ARmax100", "ARm", "ARl"):
        assert result[name] == 1.0, name
        assert result[f"mask_{name}"] == 1.0, name
    # No small ground truth: pycocotools' sentinel, outside the declared range.
    assert result["APs"] == result["mask_APs"] == result["ARs"] == NO_GROUND_TRUTH
    assert METRIC_RANGES["APs"] == (0.0, 1.0)


def test_perturbed_predictions_give_ap_between_zero_and_one(annotation_file, annotations):
    result = _evaluate(
        CocoMetrics(annotation_file, include_mask=True), annotations, _perturbed(annotations)
    )
    assert 0.0 < result["AP"] < 1.0
    assert 0.0 < result["mask_AP"] < 1.0
    assert result["AP50"] > result["AP75"]


@pytest.mark.parametrize("make", [_perfect, _perturbed])
def test_groundtruth_dicts_match_the_annotation_file(annotation_file, annotations, make):
    from_file = _evaluate(
        CocoMetrics(annotation_file, include_mask=True), annotations, make(annotations)
    )
    from_dicts = _evaluate(CocoMetrics(None, include_mask=True), annotations, make(annotations))
    assert from_dicts == pytest.approx(from_file, abs=1e-6)


def test_png_groundtruth_masks_match_binary_masks(annotations):
    gt = _groundtruths(annotations, [1, 2], 4)
    rows = zip(gt["masks"], gt["height"], gt["width"], strict=True)
    encoded = [[_png(m[:h, :w]) for m in row] for row, h, w in rows]
    png = dict(gt, masks=np.array(encoded, object))
    predictions = _predictions({i: _perturbed(annotations)[i] for i in (1, 2)}, 5)
    results = []
    for groundtruths in (gt, png):
        metrics = CocoMetrics(None, include_mask=True)
        metrics.update(groundtruths, predictions)
        results.append(metrics.result())
    assert results[0] == results[1]


def _png(mask: np.ndarray) -> bytes:
    """A binary mask as PNG bytes, like Model Garden's `groundtruth_instance_masks_png`."""
    return cv2.imencode(".png", mask * 255)[1].tobytes()


def test_results_are_floats_and_stdout_stays_empty(annotation_file, annotations, capfd):
    capfd.readouterr()
    metrics = CocoMetrics(annotation_file, include_mask=True)
    result = _evaluate(metrics, annotations, _perturbed(annotations))
    assert capfd.readouterr().out == ""
    assert all(type(value) is float for value in result.values())
    assert "Average Precision" in metrics.summary


def test_result_is_repeatable_and_reset_forgets(annotation_file, annotations):
    metrics = CocoMetrics(annotation_file)
    first = _evaluate(metrics, annotations, _perturbed(annotations))
    assert metrics.result() == first
    metrics.reset()
    assert metrics.result() == dict.fromkeys(BOX_METRIC_NAMES, NO_GROUND_TRUTH)
    assert _evaluate(metrics, annotations, _perfect(annotations))["AP"] == 1.0


def test_no_prediction_gives_zero(annotation_file, annotations):
    empty = {i: [] for i in IMAGES}
    for source in (annotation_file, None):
        result = _evaluate(CocoMetrics(source, include_mask=True), annotations, empty)
        assert result["AP"] == result["mask_AP"] == result["ARmax100"] == 0.0


def test_zero_detection_slots_give_zero(annotation_file):
    predictions = {
        "source_id": np.array([1, 2]),
        "num_detections": np.zeros(2, np.int32),
        "detection_boxes": np.zeros((2, 0, 4), np.float32),
        "detection_classes": np.zeros((2, 0), np.float32),
        "detection_scores": np.zeros((2, 0), np.float32),
    }
    metrics = CocoMetrics(annotation_file)
    metrics.update(None, predictions)
    assert metrics.result()["AP"] == 0.0


def test_no_groundtruth_gives_minus_one(tmp_path, annotations):
    detections = _perfect(annotations)
    empty_file = _write_json(tmp_path / "empty.json", [])
    for source in (empty_file, None):
        metrics = CocoMetrics(source, include_mask=True)
        for images, slots in (([1, 2], 5), ([3], 3)):
            predictions = _predictions({i: detections[i] for i in images}, slots)
            metrics.update(_groundtruths([], images, 4), predictions)
        result = metrics.result()
        assert set(result.values()) == {NO_GROUND_TRUTH}, source


def test_no_update_gives_minus_one():
    result = CocoMetrics(None, include_mask=True).result()
    assert result == dict.fromkeys(BOX_METRIC_NAMES + MASK_METRIC_NAMES, NO_GROUND_TRUTH)


def test_per_category_metrics_use_category_names(annotation_file, annotations):
    metrics = CocoMetrics(annotation_file, include_mask=True, per_category=True)
    perfect = _evaluate(metrics, annotations, _perfect(annotations))
    for name in ("cat", "dog", "traffic_light"):
        assert perfect[f"AP_{name}"] == perfect[f"mask_AP_{name}"] == 1.0, name
    assert perfect["AP_unused"] == perfect["mask_ARmax100_unused"] == NO_GROUND_TRUTH
    metrics.reset()
    perturbed = _evaluate(metrics, annotations, _perturbed(annotations))
    assert 0.0 < perturbed["AP_cat"] < 1.0
    assert all(type(value) is float for value in perturbed.values())


def test_small_masks_paste_one_pixel_larger(tmp_path):
    """Model Garden pastes box-relative masks Detectron-style, the box's far edge included:
    a perfect 28-px mask covers 29x29 pixels (IoU 0.93), so mask AP stays below 1."""
    objects = [(3, 2, [40, 40, 68, 40, 68, 68, 40, 68], 0)]
    small = _annotations(objects)
    path = _write_json(tmp_path / "small.json", small, {3: IMAGES[3]})
    metrics = CocoMetrics(path, include_mask=True)
    metrics.update(None, _predictions({3: _detections(small, 3)}, 2))
    result = metrics.result()
    assert result["AP"] == result["APs"] == result["mask_AP50"] == 1.0
    assert result["mask_AP"] < 1.0 and result["APl"] == NO_GROUND_TRUTH


def test_missing_keys_are_named():
    metrics = CocoMetrics(None, include_mask=True)
    with pytest.raises(KeyError, match="detection_masks"):
        metrics.update({}, {"source_id": np.array([1])})
    predictions = _predictions({3: []}, 1)
    with pytest.raises(KeyError, match="masks"):
        metrics.update({"source_id": np.array([3])}, predictions)


def test_no_ground_truth_of_a_size_reads_n_a_on_the_console():
    """APm is -1 when a split has no medium objects: the progress and done lines say n/a."""
    from models.core.task import Task

    methods = {"metric_range": Task.metric_range, "metric_text": Task.metric_text}
    task = type("Detector", (), {"metric_ranges": METRIC_RANGES, **methods})()
    assert task.metric_text("APm", NO_GROUND_TRUTH) == "n/a"
    assert task.metric_text("eval_sparse/mask_APl", -1.0) == "n/a"
    assert task.metric_text("APm", 0.25) == "0.2500" and task.metric_text("AP", 0.0) == "0.0000"
