"""Semantic segmentation on the shared VOC-schema pipeline (DeepLab): per-pixel softmax cross
entropy that skips the ignore label, mean and per-class IoU from a confusion matrix summed over
the whole evaluation, a JPEG -> class map export and the mask drawn over the image."""

from __future__ import annotations

import re
from collections.abc import Sequence

import gin
import numpy as np
import tensorflow as tf
from official.vision.losses import segmentation_losses

from models.core import optimization, registry
from models.core.export import image_bytes_signature
from models.core.task import Models, Task
from models.data.convert import voc
from models.data.segmentation import SegmentationInput
from models.tasks.drawing import draw_class_map


@gin.configurable
class SemanticSegmentationTask(Task):
    """Model Garden's SegmentationLoss (logits resized bilinearly to the labels, pixels of
    `ignore_label` skipped, optional label smoothing and hard-pixel mining with
    `top_k_percent_pixels`) plus L2 from `weight_decay.rate`. Evaluation upsamples the logits to
    the label grid, takes the argmax and accumulates a confusion matrix over the valid pixels:
    `mean_iou` (over the classes present in labels or predictions), `pixel_accuracy` and
    `iou_<class name>` for each class.

    `model` is the registered variant (`run.model = "deeplabv3plus_resnet101"`), built with the
    input's classes (a fully convolutional model: any image size).
    """

    primary_metric = "mean_iou"
    metric_ranges = {"iou": (0.0, 1.0), "accuracy": (0.0, 1.0)}

    def __init__(
        self,
        model: str,
        data_dir: str | None = None,
        seed: int | None = None,
        label_smoothing: float = 0.0,
        top_k_percent_pixels: float = 1.0,
        draw_opacity: float = 0.5,
    ):
        self.model, self.seed = model, seed
        self.input = SegmentationInput(data_dir=data_dir)
        self.draw_opacity = draw_opacity
        self.loss = segmentation_losses.SegmentationLoss(
            label_smoothing=label_smoothing,
            class_weights=[],
            ignore_label=self.input.ignore_label,
            use_groundtruth_dimension=True,
            top_k_percent_pixels=top_k_percent_pixels,
        )

    def build_models(self) -> Models:
        size, classes = min(self.input.train_size), self.input.num_classes
        return {"model": registry.create_model(self.model, num_classes=classes, image_size=size)}

    # ------------------------------------------------------------------ training

    def train_step(self, inputs, models, optimizers, metrics, global_batch_size):
        images, labels = inputs
        model, optimizer = models["model"], optimizers["model"]
        replicas = tf.distribute.get_strategy().num_replicas_in_sync
        with tf.GradientTape() as tape:
            logits = tf.cast(model(images, training=True)["logits"], tf.float32)
            pixel_loss = self.loss(logits, labels["masks"])
            penalty = optimization.l2_penalty(optimizer, model.trainable_variables)
            loss = (pixel_loss + penalty + tf.add_n(model.losses or [0.0])) / replicas
        # Zero for what the logits do not use: Model Garden's MobileNetV2 builds its last 1x1
        # conv even when the decoder reads the stride-16 features before it.
        grads = tape.gradient(
            loss, model.trainable_variables, unconnected_gradients=tf.UnconnectedGradients.ZERO
        )
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return {"loss": pixel_loss}

    # ------------------------------------------------------------------ evaluation

    def validation_step(self, inputs, models, metrics, evaluation):
        images, labels = inputs
        logits = tf.cast(models["model"](images, training=False)["logits"], tf.float32)
        return {"confusion": self.confusion(logits, labels["masks"])}

    def confusion(self, logits: tf.Tensor, masks: tf.Tensor) -> tf.Tensor:
        """[classes, classes] pixel counts (row: label, column: prediction) of one batch, the
        logits upsampled to the masks' grid; pixels of the ignore label count nowhere."""
        logits = tf.image.resize(logits, tf.shape(masks)[1:3], method="bilinear")
        predicted = tf.reshape(tf.argmax(logits, axis=-1, output_type=tf.int32), [-1])
        truth = tf.reshape(tf.cast(masks, tf.int32), [-1])
        valid = tf.not_equal(truth, self.input.ignore_label)
        classes = self.input.num_classes
        return tf.math.confusion_matrix(
            tf.where(valid, truth, 0),
            predicted,
            classes,
            weights=tf.cast(valid, tf.int64),
            dtype=tf.int64,
        )

    def aggregate_logs(self, state, step_outputs, evaluation):
        classes = self.input.num_classes
        counts = np.asarray(step_outputs["confusion"]).reshape(-1, classes, classes).sum(0)
        return counts if state is None else state + counts

    def reduce_aggregated_logs(self, state, evaluation) -> dict[str, float]:
        return iou_metrics(state, self.input.class_names)

    # ------------------------------------------------------------------ serving

    def serving_signatures(self, models: Models):
        model, size = models["model"], self.input.output_size

        def class_map(image_bytes):
            """One image's class map on its own pixels."""
            image, info = self.input.decode_for_serving(image_bytes)
            logits = tf.cast(model(image[tf.newaxis], training=False)["logits"], tf.float32)
            logits = tf.image.resize(logits, size, method="bilinear")[0]
            height, width = tf.unstack(tf.cast(info[1], tf.int32))
            scaled = logits[:height, :width]
            original = tf.cast(info[0], tf.int32)
            logits = tf.image.resize(scaled, original, method="bilinear")
            return tf.argmax(logits, axis=-1, output_type=tf.int32), original

        def predict(image_bytes):
            """class_map [B, H, W] int32 (each JPEG's own height and width; beyond them, up to
            the batch's largest, the ignore label) and image_size [B, 2]."""
            largest, ignore = _largest(image_bytes), self.input.ignore_label
            maps, sizes = tf.map_fn(
                lambda one: _padded(*class_map(one), largest, ignore),
                image_bytes,
                fn_output_signature=(
                    tf.TensorSpec([None, None], tf.int32),
                    tf.TensorSpec([2], tf.int32),
                ),
            )
            return {"class_map": maps, "image_size": sizes}

        def nothing():
            return {
                "class_map": tf.zeros([0, 0, 0], tf.int32),
                "image_size": tf.zeros([0, 2], tf.int32),
            }

        return {"serving_default": image_bytes_signature(predict, nothing)}

    def draw_prediction(self, models: Models, image_bytes: bytes) -> tuple[np.ndarray, str]:
        """The image with each pixel tinted in its predicted class's VOC colour (background
        left as it is); the summary gives each class's share of the image."""
        answer = self.serving_signatures(models)["serving_default"](tf.constant([image_bytes]))
        classes = answer["class_map"][0].numpy()
        image = tf.io.decode_image(image_bytes, channels=3, expand_animations=False).numpy()
        picture = draw_class_map(image, classes, voc.palette(), self.draw_opacity)
        names = self.input.class_names
        shares = np.bincount(classes.ravel(), minlength=len(names)) / classes.size
        found = [f"{names[c]} {shares[c]:.1%}" for c in np.argsort(-shares) if shares[c] > 0]
        return picture, "pixels: " + ", ".join(found)


def iou_metrics(confusion: np.ndarray, names: Sequence[str]) -> dict[str, float]:
    """mean_iou over the classes that occur (in labels or predictions), pixel_accuracy, and
    iou_<name> of every class (0 where it never occurs) from a [C, C] confusion matrix."""
    confusion = np.asarray(confusion, np.float64)
    hits = np.diag(confusion)
    union = confusion.sum(0) + confusion.sum(1) - hits
    present = union > 0
    iou = np.where(present, hits / np.maximum(union, 1), 0.0)
    metrics = {
        "mean_iou": float(iou[present].mean()) if present.any() else 0.0,
        "pixel_accuracy": float(hits.sum() / max(confusion.sum(), 1)),
    }
    for name, value in zip(names, iou, strict=True):
        metrics[f"iou_{_metric_name(name)}"] = float(value)
    return metrics


def _metric_name(name: str) -> str:
    """A class name as a metric name part: letters, digits and underscores."""
    return re.sub(r"\W+", "_", str(name)).strip("_") or "class"


def _largest(image_bytes: tf.Tensor) -> tf.Tensor:
    """[2] the largest height and width among the batch's images (read from their headers)."""
    shapes = tf.map_fn(
        lambda one: tf.image.extract_jpeg_shape(one)[:2],
        image_bytes,
        fn_output_signature=tf.TensorSpec([2], tf.int32),
    )
    return tf.reduce_max(shapes, axis=0)


def _padded(
    class_map: tf.Tensor, size: tf.Tensor, largest: tf.Tensor, ignore_label: int
) -> tuple[tf.Tensor, tf.Tensor]:
    """class_map padded to `largest` with the ignore label, and its own size."""
    pad = largest - size
    padded = tf.pad(class_map, [[0, pad[0]], [0, pad[1]]], constant_values=ignore_label)
    return padded, size
