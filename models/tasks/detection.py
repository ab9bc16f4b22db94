"""Object detection on the shared COCO-schema pipeline: single-stage anchor detectors
(RetinaNet; the Object Detection API's SSDs), focal or SSD's hard-negative softmax loss plus a
Huber box loss, COCO box AP out of the graph."""

from __future__ import annotations

import gin
import tensorflow as tf
import tf_keras
from official.vision.losses import focal_loss, loss_utils

from models.core import registry
from models.core.errors import UsageError, check_choice
from models.core.task import Models
from models.data.detection import DetectionInput
from models.tasks.coco_detection import CocoDetectionTask
from models.tasks.hard_negatives import hard_negative_softmax_loss

# Class losses and the score activation each trains (the model's `class_activation`).
CLASS_LOSSES = {"focal": "sigmoid", "hard_negative_softmax": "softmax"}


@gin.configurable
class DetectionTask(CocoDetectionTask):
    """A single-stage detector's training objective: `class_loss` "focal" (RetinaNet, Lin et
    al. 2017: focal loss over every anchor; the default for sigmoid-scored models) or
    "hard_negative_softmax" (SSD, Liu et al. 2016, the default for softmax-scored models:
    softmax cross-entropy over the positives and the `negatives_per_positive` hardest
    negatives per positive of each image), and a Huber loss on the positives' box offsets, all
    normalised by the positives; evaluation runs the model's NMS and scores its detections with
    pycocotools (box AP, AP50, ...).

    `model` is the registered variant (`run.model = "retinanet_resnet50_fpn"`), built with
    the input's classes (background included) and image size; the input labels the anchors the
    variant predicts on (the `anchors` grid, or `ssd_anchors`). Defaults: Model Garden's
    retinanet_resnetfpn_coco.
    """

    def __init__(
        self,
        model: str,
        data_dir: str | None = None,
        seed: int | None = None,
        class_loss: str | None = None,
        focal_loss_alpha: float = 0.25,
        focal_loss_gamma: float = 1.5,
        negatives_per_positive: float = 3.0,
        huber_loss_delta: float = 0.1,
        box_loss_weight: float = 50.0,
        draw_score_threshold: float = 0.25,
    ):
        anchors = registry.model_entry(model).anchors  # SSD's default boxes, or `anchors`
        data = DetectionInput(data_dir=data_dir, anchors=anchors)
        super().__init__(model, data, seed, draw_score_threshold)
        if class_loss is not None:
            check_choice(class_loss, CLASS_LOSSES, "DetectionTask.class_loss")
        self.class_loss = class_loss
        self.focal = focal_loss.FocalLoss(
            focal_loss_alpha, focal_loss_gamma, reduction=tf_keras.losses.Reduction.SUM
        )
        self.negatives_per_positive = negatives_per_positive
        self.huber = tf_keras.losses.Huber(
            huber_loss_delta, reduction=tf_keras.losses.Reduction.SUM
        )
        self.box_loss_weight = box_loss_weight

    def build_models(self) -> Models:
        size, classes = self.input.image_size, self.input.num_classes
        model = registry.create_model(self.model, num_classes=classes, image_size=size)
        scored = getattr(model, "class_activation", "sigmoid")
        if self.class_loss is None:  # the loss that trains the model's scores
            self.class_loss = next(k for k, v in CLASS_LOSSES.items() if v == scored)
        trained = CLASS_LOSSES[self.class_loss]
        if scored != trained:
            raise UsageError(
                f"DetectionTask.class_loss = '{self.class_loss}' trains {trained} scores, but "
                f"{self.model} scores with {scored}: set its class_activation = '{trained}' "
                "or pick the other class_loss"
            )
        return {"model": model}

    def losses(self, outputs: dict, labels: dict) -> dict[str, tf.Tensor]:
        """Model loss, class loss and box loss of one replica's batch, each normalised by its
        positive anchors (+1, so that a batch without objects is finite)."""
        positives = tf.reduce_sum(labels["box_weights"]) + 1.0
        class_loss = self._class_loss(outputs, labels) / positives
        box_loss = self.huber(
            loss_utils.multi_level_flatten(labels["box_targets"], 4),
            loss_utils.multi_level_flatten(outputs["box_outputs"], 4),
            sample_weight=labels["box_weights"] / positives,
        )
        model_loss = class_loss + self.box_loss_weight * box_loss
        return {"model_loss": model_loss, "class_loss": class_loss, "box_loss": box_loss}

    def _class_loss(self, outputs: dict, labels: dict) -> tf.Tensor:
        """The batch's summed class loss over the anchors the labeler counts."""
        classes = self.input.num_classes
        targets = loss_utils.multi_level_flatten(labels["cls_targets"], None)
        weights = labels["cls_weights"]
        logits = loss_utils.multi_level_flatten(outputs["cls_outputs"], classes)
        if self.class_loss != "hard_negative_softmax":
            return self.focal(tf.one_hot(targets, classes), logits, sample_weight=weights)
        targets = tf.maximum(tf.cast(targets, tf.int32), 0)  # ignored anchors: weight 0
        per_image = hard_negative_softmax_loss(
            logits, targets, weights, self.negatives_per_positive
        )
        return tf.reduce_sum(per_image)
