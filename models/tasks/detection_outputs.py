"""The pieces of CocoDetectionTask (RetinaNet's DetectionTask, Mask R-CNN's
InstanceSegmentationTask) that work on a model's outputs: detections in original-image pixels
for COCO AP, the evaluation's aggregation with the padding dropped, the JPEG-bytes serving
signature and the drawn prediction. Masks, where a model has them, ride along box-relative, as
COCO AP reads them."""

from __future__ import annotations

import numpy as np
import tensorflow as tf
import tf_keras
from official.vision.ops import box_ops, mask_ops

from models.core.export import image_bytes_signature
from models.data.detection import PAD_SOURCE_ID, DetectionInput
from models.tasks.coco_metrics import CocoMetrics
from models.tasks.drawing import draw_boxes, draw_masks

SHOWN = 5  # detections a --mode=predict summary names
FADED = 3  # best detections drawn, faded, when none reaches the threshold
BOX_OUTPUTS = ("detection_boxes", "detection_scores", "detection_classes", "num_detections")


def max_detections(model: tf_keras.Model) -> int:
    """Rows per image the model's NMS returns."""
    return int(model.detection_generator.get_config()["max_num_detections"])


def mask_size(model: tf_keras.Model) -> int | None:
    """The side of a Mask R-CNN's box-relative masks (mask ROI crop x the head's upsampling),
    or None for a model without masks."""
    if getattr(model, "mask_head", None) is None:
        return None
    crop = model.mask_roi_aligner.get_config()["crop_size"]
    return crop * model.mask_head.get_config()["upsample_factor"]


def to_original_pixels(boxes: tf.Tensor, image_info: tf.Tensor) -> tf.Tensor:
    """[B, K, 4] boxes in the model input's pixels -> each original image's pixels
    (image_info[:, 2] is the resize scale, Model Garden's layout)."""
    scale = tf.tile(tf.cast(image_info[:, 2:3, :], tf.float32), [1, 1, 2])
    return tf.cast(boxes, tf.float32) / scale


def detect_for_coco(
    model: tf_keras.Model, images: tf.Tensor, labels: dict, keys: tuple[str, ...] = BOX_OUTPUTS
) -> dict:
    """A validation step's return: the ground truth and the model's `keys` detections on the
    parser's anchors, boxes in original pixels, with the ids and image_info CocoMetrics reads."""
    outputs = model(
        images,
        anchor_boxes=labels["anchor_boxes"],
        image_shape=labels["image_info"][:, 1, :],
        training=False,
    )
    predictions = {key: outputs[key] for key in keys}
    predictions["detection_boxes"] = to_original_pixels(
        outputs["detection_boxes"], labels["image_info"]
    )
    predictions["source_id"] = labels["groundtruths"]["source_id"]
    predictions["image_info"] = labels["image_info"]
    return {"groundtruths": labels["groundtruths"], "predictions": predictions}


def add_to_coco(
    state: CocoMetrics | None,
    step_outputs: dict,
    annotation_file: str | None,
    include_mask: bool = False,
) -> CocoMetrics:
    """Feeds one step's gathered detections (padding images dropped) to COCO AP."""
    if state is None:
        state = CocoMetrics(annotation_file, include_mask=include_mask)
    real = step_outputs["groundtruths"]["source_id"] != PAD_SOURCE_ID
    if np.any(real):
        groundtruths, predictions = (
            {key: value[real] for key, value in step_outputs[part].items()}
            for part in ("groundtruths", "predictions")
        )
        state.update(groundtruths, predictions)
    return state


def jpeg_serving(
    data: DetectionInput, model: tf_keras.Model, rows: int, mask_side: int | None = None
) -> tf.types.experimental.Function:
    """The `serving_default` of a detector reading JPEG bytes; `mask_side` (the mask head's
    output side) adds each detection's mask, box-relative."""

    anchors = data.fixed_anchor_boxes()

    def predict(image_bytes):
        """Each image's detections: boxes [ymin, xmin, ymax, xmax] in its own pixels, COCO
        category ids, scores, and how many of the rows are real; with masks, each detection's
        mask probabilities relative to its box."""
        signature = (
            tf.TensorSpec([data.image_size] * 2 + [3], tf.as_dtype(data.dtype)),
            tf.TensorSpec([4, 2], tf.float32),
        )
        images, info = tf.map_fn(
            data.decode_for_serving, image_bytes, fn_output_signature=signature
        )
        outputs = model(
            images,
            image_shape=info[:, 1, :],
            anchor_boxes=batch_of(anchors, images),
            training=False,
        )
        answer = {
            "boxes": to_original_pixels(outputs["detection_boxes"], info),
            "classes": tf.cast(outputs["detection_classes"], tf.int32),
            "scores": tf.cast(outputs["detection_scores"], tf.float32),
            "num_detections": tf.cast(outputs["num_detections"], tf.int32),
        }
        if mask_side:
            answer["masks"] = tf.cast(outputs["detection_masks"], tf.float32)
        return answer

    def nothing():
        empty = {
            "boxes": tf.zeros([0, rows, 4]),
            "classes": tf.zeros([0, rows], tf.int32),
            "scores": tf.zeros([0, rows]),
            "num_detections": tf.zeros([0], tf.int32),
        }
        if mask_side:
            empty["masks"] = tf.zeros([0, rows, mask_side, mask_side])
        return empty

    return image_bytes_signature(predict, nothing)


def batch_of(anchors: dict[str, tf.Tensor] | None, images: tf.Tensor) -> dict | None:
    """Each level's anchors repeated for every image of the batch (None stays None: the model
    makes its own)."""
    if anchors is None:
        return None
    count = tf.shape(images)[0]
    return {level: tf.tile(boxes[None], [count, 1, 1, 1]) for level, boxes in anchors.items()}


def draw_detections(
    serve: tf.types.experimental.Function,
    data: DetectionInput,
    image_bytes: bytes,
    threshold: float,
) -> tuple[np.ndarray, str]:
    """The image with each detection scoring at least `threshold` boxed and labelled
    (category name, score), its mask tinted where the model has masks; when none does, the
    FADED best ones below it, pale and labelled as such. The summary gives the count and the
    best SHOWN of them."""
    answer = serve(tf.constant([image_bytes]))
    count = int(answer["num_detections"][0])
    scores = answer["scores"][0, :count].numpy()
    keep = scores >= threshold
    faded = not keep.any()
    if faded:  # an early model: its best guesses, so that the drawing shows something
        keep = np.arange(count) < FADED  # detections come sorted by score
    boxes = answer["boxes"][0, :count].numpy()[keep]
    classes = answer["classes"][0, :count].numpy()[keep]
    names = {c["id"]: c["name"] for c in data.dataset_info().get("categories", [])}
    kept = zip(classes, scores[keep], strict=True)
    labels = [f"{names.get(int(c), int(c))}: {score:.2f}" for c, score in kept]
    image = tf.io.decode_jpeg(image_bytes, channels=3).numpy()
    if "masks" in answer and len(boxes) and not faded:
        masks = answer["masks"][0, :count].numpy()[keep]
        image = draw_masks(image, pasted_masks(masks, boxes, image.shape[:2]))
    if faded:
        picture = draw_boxes(image, boxes, [f"below {threshold:g}: {x}" for x in labels], True)
        return picture, f"no detection >= {threshold:g}; the best {len(labels)}, drawn faded: " + (
            ", ".join(labels) or "none"
        )
    more = f" (and {len(labels) - SHOWN} more)" if len(labels) > SHOWN else ""
    shown = ", ".join(labels[:SHOWN])
    return draw_boxes(
        image, boxes, labels
    ), f"{len(labels)} detections >= {threshold:g}: {shown}{more}"


def pasted_masks(masks: np.ndarray, boxes: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """[N, h, w] box-relative mask probabilities -> [N, H, W] binary masks on the image, as
    COCO mask AP pastes them (Model Garden's paste_instance_masks, > 0.5 foreground)."""
    return mask_ops.paste_instance_masks(masks, box_ops.yxyx_to_xywh(boxes), *size)
