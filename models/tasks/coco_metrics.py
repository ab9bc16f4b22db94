"""COCO box and mask AP/AR computed outside the graph, for a detection task's eval hooks.

A detection task keeps one `CocoMetrics` per evaluation: `aggregate_logs` passes each eval
step's gathered numpy outputs to `update(groundtruths, predictions)`, and
`reduce_aggregated_logs` returns `result()`. The numbers come from Model Garden's
`official.vision.evaluation.coco_evaluator.COCOEvaluator` (pycocotools underneath), run
with `need_rescale_bboxes=False`; pycocotools' printed tables are kept in `summary`, never
written to stdout.

Every array is batched: the first axis is the image, the second (K) the instance slot.

predictions (required: source_id, num_detections, detection_boxes, detection_classes,
detection_scores; with `include_mask` also detection_masks and image_info):
  - source_id [B]: int, or a numeric string (b"397133"); the COCO image id.
  - num_detections [B]: int; slots past it are padding and never evaluated.
  - detection_boxes [B, K, 4]: float [ymin, xmin, ymax, xmax] in pixels of the ORIGINAL
    image (not the resized model input, not normalised; divide by image_info[:, 2] first).
  - detection_classes [B, K]: int (or integral float) category id, as in the ground truth.
  - detection_scores [B, K]: float confidence.
  - detection_masks [B, K, mh, mw]: float mask-head outputs RELATIVE TO EACH BOX (e.g.
    28x28 probabilities, not pasted onto the image): Model Garden's
    `mask_ops.paste_instance_masks` resizes each into its box (Detectron-style, with a
    1-pixel border) and keeps > 0.5 as foreground.
  - image_info [B, 4, 2]: Model Garden's layout; only row 0, the original (height, width),
    is read: the canvas the masks are pasted onto.
  - detection_outer_boxes [B, K, 4] (optional): boxes the masks are relative to, same
    frame as detection_boxes; by default the masks are relative to detection_boxes.

groundtruths (read only when `annotation_file` is None, else ignored and may be None;
required: source_id, height, width, num_detections, boxes, classes; with `include_mask`
also masks):
  - source_id [B], height [B], width [B]: the image id and its original size in pixels.
  - num_detections [B]: int; slots past it are padding.
  - boxes [B, K, 4]: float [ymin, xmin, ymax, xmax] in original-image pixels.
  - classes [B, K]: int category id.
  - is_crowds [B, K] (optional): crowd regions (matches to them are ignored); default 0.
  - areas [B, K] (optional): instance areas, which decide small/medium/large; default the
    mask area (with masks) or the box area. Pass COCO's `area` to match the JSON file.
  - masks: either [B, K, H, W] binary masks on the original image (rows/columns beyond
    height/width are padding and cropped), or [B, K] PNG-encoded bytes of such masks
    (Model Garden's `groundtruth_instance_masks_png`).

`result()` returns `BOX_METRIC_NAMES` (+ `MASK_METRIC_NAMES` with `include_mask`); with
`per_category` also `<metric>_<category>` and `mask_<metric>_<category>` for every category
of the ground truth (its JSON name, characters outside [A-Za-z0-9_.-] made '_'; the id when
the ground truth comes from dicts), e.g. `AP_traffic_light`, `mask_AP50_3`.

Values are fractions in [0, 1]. pycocotools returns -1 (`NO_GROUND_TRUTH`) where nothing
could be measured: no ground truth of that size (APs/APm/APl, ARs/ARm/ARl), no ground
truth at all, or no image evaluated. Ground truth without any prediction gives 0. Images
are evaluated when they appear in `update` (every image seen, even with no detection).
"""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Mapping

import numpy as np
from official.vision.evaluation import coco_evaluator
from PIL import Image

Arrays = Mapping[str, np.ndarray]

#: Box metrics `result()` returns, in pycocotools' `stats` order (maxDets = 1, 10, 100).
BOX_METRIC_NAMES: tuple[str, ...] = (
    "AP",
    "AP50",
    "AP75",
    "APs",
    "APm",
    "APl",
    "ARmax1",
    "ARmax10",
    "ARmax100",
    "ARs",
    "ARm",
    "ARl",
)
#: Mask metrics `result()` adds with `include_mask`.
MASK_METRIC_NAMES: tuple[str, ...] = tuple(f"mask_{name}" for name in BOX_METRIC_NAMES)
#: pycocotools' value where nothing could be measured (e.g. no small ground truth for APs).
NO_GROUND_TRUTH = -1.0
#: Ranges for `Task.metric_ranges`: fractions, never percentages. -1 is a sentinel, not a
#: reachable value, so it lies outside and can never be a target.
METRIC_RANGES: dict[str, tuple[float, float]] = {
    name: (0.0, 1.0) for name in BOX_METRIC_NAMES + MASK_METRIC_NAMES
}

_PREDICTION_KEYS = ("source_id", "num_detections", "detection_boxes")
_PREDICTION_KEYS += ("detection_classes", "detection_scores")
_MASK_PREDICTION_KEYS = ("detection_masks", "image_info")
_GROUNDTRUTH_KEYS = ("source_id", "height", "width", "num_detections", "boxes", "classes")
_OPTIONAL_GROUNDTRUTH_KEYS = ("is_crowds", "areas")
_DETECTION_ROWS = ("detection_boxes", "detection_classes", "detection_scores")
_DETECTION_ROWS += ("detection_masks", "detection_outer_boxes")
#: Category id of padding slots: no ground truth has it, so pycocotools ignores them.
_PADDING_CLASS = -1
#: Per-category statistics: (name, precision (else recall), IoU (None: 0.5:0.95), area
#: range index (all, small, medium, large), maxDets index (1, 10, 100)).
_CATEGORY_STATS = (
    ("AP", True, None, 0, 2),
    ("AP50", True, 0.5, 0, 2),
    ("AP75", True, 0.75, 0, 2),
    ("APs", True, None, 1, 2),
    ("APm", True, None, 2, 2),
    ("APl", True, None, 3, 2),
    ("ARmax1", False, None, 0, 0),
    ("ARmax10", False, None, 0, 1),
    ("ARmax100", False, None, 0, 2),
    ("ARs", False, None, 1, 2),
    ("ARm", False, None, 2, 2),
    ("ARl", False, None, 3, 2),
)


def _missing(batch: Arrays | None, keys: tuple[str, ...], what: str) -> None:
    """Raises KeyError naming the required keys `batch` lacks, at update time not result's."""
    absent = [key for key in keys if batch is None or key not in batch]
    if absent:
        raise KeyError(f"CocoMetrics.update: {what} lack {absent}")


def _image_ids(source_id: np.ndarray) -> np.ndarray:
    """COCO image ids as int64, so predictions and ground truth ids compare equal."""
    ids = np.asarray(source_id)
    if ids.dtype.kind in "SUO":
        return np.array([int(i) for i in ids.reshape(-1)], np.int64).reshape(ids.shape)
    return ids.astype(np.int64)


def _valid_slots(num_detections: np.ndarray, slots: int) -> np.ndarray:
    """[B, K] bool: the slots each image really fills (num_detections), not padding."""
    counts = np.asarray(num_detections, np.int64).reshape(-1, 1)
    return np.arange(slots)[None, :] < counts


def _prepare_predictions(predictions: Arrays, include_mask: bool) -> dict[str, np.ndarray]:
    """Own copies of the keys evaluated, padding slots moved to a class nobody has."""
    keys = _PREDICTION_KEYS + (_MASK_PREDICTION_KEYS if include_mask else ())
    if include_mask and "detection_outer_boxes" in predictions:
        keys += ("detection_outer_boxes",)
    batch = {key: np.array(predictions[key]) for key in keys}
    batch["source_id"] = _image_ids(batch["source_id"])
    classes = np.rint(batch["detection_classes"]).astype(np.int64)
    valid = _valid_slots(batch["num_detections"], classes.shape[1])
    batch["detection_classes"] = np.where(valid, classes, _PADDING_CLASS)
    batch["detection_scores"] = np.where(valid, batch["detection_scores"], 0.0)
    return batch


def _pad_slots(batch: dict[str, np.ndarray], slots: int) -> dict[str, np.ndarray]:
    """`batch` with `slots` detection slots: Model Garden reads K from the first batch only."""
    missing = slots - batch["detection_classes"].shape[1]
    if missing <= 0:
        return dict(batch)
    padded = dict(batch)
    for key in _DETECTION_ROWS:
        if key in batch:
            widths = [(0, 0)] * batch[key].ndim
            widths[1] = (0, missing)
            fill = _PADDING_CLASS if key == "detection_classes" else 0
            padded[key] = np.pad(batch[key], widths, constant_values=fill)
    return padded


def _png(mask: np.ndarray) -> bytes:
    """One binary mask as PNG bytes, the form Model Garden's ground truth converter reads."""
    buffer = io.BytesIO()
    Image.fromarray((np.asarray(mask) > 0).astype(np.uint8) * 255).save(buffer, "PNG")
    return buffer.getvalue()


def _png_masks(groundtruths: Arrays) -> np.ndarray:
    """[B, K] PNG bytes from [B, K, H, W] binary masks cropped to each image's size."""
    masks = np.asarray(groundtruths["masks"])
    if masks.ndim == 2:
        return masks.astype(object)
    encoded = np.full(masks.shape[:2], b"", dtype=object)
    valid = _valid_slots(groundtruths["num_detections"], masks.shape[1])
    for j, k in zip(*np.nonzero(valid), strict=True):
        height, width = int(groundtruths["height"][j]), int(groundtruths["width"][j])
        encoded[j, k] = _png(masks[j, k, :height, :width])
    return encoded


def _prepare_groundtruths(groundtruths: Arrays, include_mask: bool) -> dict[str, np.ndarray]:
    """Own copies of the ground truth keys evaluated, masks as PNG bytes."""
    keys = _GROUNDTRUTH_KEYS + tuple(k for k in _OPTIONAL_GROUNDTRUTH_KEYS if k in groundtruths)
    batch = {key: np.array(groundtruths[key]) for key in keys}
    batch["source_id"] = _image_ids(batch["source_id"])
    if include_mask:
        batch["masks"] = _png_masks(groundtruths)
    return batch


def _mean_valid(values: np.ndarray) -> float:
    """pycocotools' summary of one statistic: mean of the measured entries, else -1."""
    measured = values[values > -1]
    return float(np.mean(measured)) if measured.size else NO_GROUND_TRUTH


def _category_stat(coco_eval, index: int, stat: tuple) -> float:
    """One statistic of one category (index into params.catIds) from `coco_eval.eval`."""
    _, precision, iou, area, max_dets = stat
    thresholds = coco_eval.params.iouThrs
    rows = np.arange(len(thresholds)) if iou is None else np.isclose(thresholds, iou)
    if precision:
        return _mean_valid(coco_eval.eval["precision"][rows, :, index, area, max_dets])
    return _mean_valid(coco_eval.eval["recall"][rows, index, area, max_dets])


def _tag(name: object) -> str:
    """A category name usable in a TensorBoard tag: runs of other characters become '_'."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", str(name))


class _Evaluator(coco_evaluator.COCOEvaluator):
    """Model Garden's evaluator fed numpy (not tensors), with per-category statistics
    computed from `coco_eval.eval` (stock pycocotools has no `category_stats`)."""

    def _convert_to_numpy(self, groundtruths, predictions):
        """The inputs are numpy already (the base class calls `.numpy()` on each)."""
        return groundtruths, predictions

    def _retrieve_per_category_metrics(self, coco_eval, prefix=""):
        """`<prefix_><metric>_<category name or id>` for every category of the ground truth."""
        metrics = {}
        head = f"{prefix}_" if prefix else ""
        for index, category in enumerate(coco_eval.params.catIds):
            name = category
            if self._annotation_file:
                name = self._coco_gt.cats[category].get("name", category)
            for stat in _CATEGORY_STATS:
                value = _category_stat(coco_eval, index, stat)
                metrics[f"{head}{stat[0]}_{_tag(name)}"] = value
        return metrics


class CocoMetrics:
    """COCO box (and mask) AP/AR over the images passed to `update` since `reset`."""

    def __init__(
        self, annotation_file: str | None, include_mask: bool = False, per_category: bool = False
    ) -> None:
        """Loads the COCO JSON ground truth, or (None) reads it from `update`'s groundtruths."""
        self.include_mask = include_mask
        self.annotation_file = annotation_file
        #: pycocotools' printed output of the last `result()` (the summary tables).
        self.summary = ""
        with contextlib.redirect_stdout(io.StringIO()):
            self._evaluator = _Evaluator(
                annotation_file,
                include_mask,
                need_rescale_bboxes=False,
                per_category_metrics=per_category,
            )
        self.reset()

    @property
    def metric_names(self) -> tuple[str, ...]:
        """The overall metrics `result()` returns (per-category ones come on top)."""
        return BOX_METRIC_NAMES + (MASK_METRIC_NAMES if self.include_mask else ())

    def reset(self) -> None:
        """Forgets every image passed to `update`, for the next evaluation."""
        self._predictions: list[dict[str, np.ndarray]] = []
        self._groundtruths: list[dict[str, np.ndarray] | None] = []

    def update(self, groundtruths: Arrays | None, predictions: Arrays) -> None:
        """Adds one batch of images (keys and frames: see the module docstring)."""
        required = _PREDICTION_KEYS + (_MASK_PREDICTION_KEYS if self.include_mask else ())
        _missing(predictions, required, "predictions")
        groundtruth = None
        if not self.annotation_file:
            masks = ("masks",) if self.include_mask else ()
            _missing(groundtruths, _GROUNDTRUTH_KEYS + masks, "groundtruths")
            groundtruth = _prepare_groundtruths(groundtruths, self.include_mask)
        self._predictions.append(_prepare_predictions(predictions, self.include_mask))
        self._groundtruths.append(groundtruth)

    def result(self) -> dict[str, float]:
        """Metrics (Python floats) over every image since `reset`; repeatable, keeps state."""
        if not self._predictions:
            return dict.fromkeys(self.metric_names, NO_GROUND_TRUTH)
        slots = max(1, *(batch["detection_classes"].shape[1] for batch in self._predictions))
        printed = io.StringIO()
        try:
            with contextlib.redirect_stdout(printed):
                for groundtruth, batch in zip(self._groundtruths, self._predictions, strict=True):
                    self._evaluator.update_state(groundtruth, _pad_slots(batch, slots))
                metrics = self._evaluator.evaluate()
        finally:
            self._evaluator.reset_states()
            self.summary = printed.getvalue()
        return {name: float(value) for name, value in metrics.items()}
