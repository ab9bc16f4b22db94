"""Object detection on the shared COCO-schema pipeline: single-stage anchor detectors
(RetinaNet; SSD-style recipes), focal + Huber losses, COCO box AP out of the graph."""

from __future__ import annotations

import gin
import tensorflow as tf
import tf_keras
from official.vision.losses import focal_loss, loss_utils

from models import registry
from models.core.task import Models
from models.core.tasks.coco_detection import CocoDetectionTask
from models.data.detection import DetectionInput


@gin.configurable
class DetectionTask(CocoDetectionTask):
    """RetinaNet's training objective (Lin et al. 2017): focal loss over every anchor and a
    Huber loss on the positives' box offsets, both normalised by the positives; evaluation
    runs the model's NMS and scores its detections with pycocotools (box AP, AP50, ...).

    `model` is the registered variant (`run.model = "retinanet_resnet50_fpn"`), built with
    the input's classes (background included) and image size. Defaults: Model Garden's
    retinanet_resnetfpn_coco.
    """

    def __init__(
        self,
        model: str,
        data_dir: str | None = None,
        seed: int | None = None,
        focal_loss_alpha: float = 0.25,
        focal_loss_gamma: float = 1.5,
        huber_loss_delta: float = 0.1,
        box_loss_weight: float = 50.0,
        draw_score_threshold: float = 0.25,
    ):
        super().__init__(model, DetectionInput(data_dir=data_dir), seed, draw_score_threshold)
        self.focal = focal_loss.FocalLoss(
            focal_loss_alpha, focal_loss_gamma, reduction=tf_keras.losses.Reduction.SUM
        )
        self.huber = tf_keras.losses.Huber(
            huber_loss_delta, reduction=tf_keras.losses.Reduction.SUM
        )
        self.box_loss_weight = box_loss_weight

    def build_models(self) -> Models:
        size, classes = self.input.image_size, self.input.num_classes
        return {"model": registry.create_model(self.model, num_classes=classes, image_size=size)}

    def losses(self, outputs: dict, labels: dict) -> dict[str, tf.Tensor]:
        """Model loss, class loss and box loss of one replica's batch, each normalised by its
        positive anchors (+1, so that a batch without objects is finite)."""
        positives = tf.reduce_sum(labels["box_weights"]) + 1.0
        classes = self.input.num_classes
        targets = tf.one_hot(loss_utils.multi_level_flatten(labels["cls_targets"], None), classes)
        scores = loss_utils.multi_level_flatten(outputs["cls_outputs"], classes)
        class_loss = self.focal(targets, scores, sample_weight=labels["cls_weights"] / positives)
        box_loss = self.huber(
            loss_utils.multi_level_flatten(labels["box_targets"], 4),
            loss_utils.multi_level_flatten(outputs["box_outputs"], 4),
            sample_weight=labels["box_weights"] / positives,
        )
        model_loss = class_loss + self.box_loss_weight * box_loss
        return {"model_loss": model_loss, "class_loss": class_loss, "box_loss": box_loss}
