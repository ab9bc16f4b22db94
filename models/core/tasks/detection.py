"""Object detection on the shared COCO-schema pipeline: single-stage anchor detectors
(RetinaNet; SSD-style recipes), focal + Huber losses, COCO box AP out of the graph."""

from __future__ import annotations

from collections.abc import Sequence

import gin
import numpy as np
import tensorflow as tf
import tf_keras
from official.vision.losses import focal_loss, loss_utils

from models import registry
from models.core import optimization
from models.core.coco_metrics import METRIC_RANGES
from models.core.task import Models, Task
from models.core.tasks.detection_outputs import (
    add_to_coco,
    detect_for_coco,
    draw_detections,
    jpeg_serving,
    max_detections,
)
from models.data.detection import DetectionInput


@gin.configurable
class DetectionTask(Task):
    """RetinaNet's training objective (Lin et al. 2017): focal loss over every anchor and a
    Huber loss on the positives' box offsets, both normalised by the positives; evaluation
    runs the model's NMS and scores its detections with pycocotools (box AP, AP50, ...).

    `model` is the registered variant (`run.model = "retinanet_resnet50_fpn"`), built with
    the input's classes (background included) and image size. Defaults: Model Garden's
    retinanet_resnetfpn_coco.
    """

    primary_metric = "AP"
    metric_ranges = METRIC_RANGES

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
        self.model = model
        self.input = DetectionInput(data_dir=data_dir)
        self.seed = seed
        self.focal = focal_loss.FocalLoss(
            focal_loss_alpha, focal_loss_gamma, reduction=tf_keras.losses.Reduction.SUM
        )
        self.huber = tf_keras.losses.Huber(
            huber_loss_delta, reduction=tf_keras.losses.Reduction.SUM
        )
        self.box_loss_weight = box_loss_weight
        self.draw_score_threshold = draw_score_threshold

    def build_models(self) -> Models:
        size, classes = self.input.image_size, self.input.num_classes
        return {"model": registry.create_model(self.model, num_classes=classes, image_size=size)}

    def build_inputs(self, split, global_batch_size, input_context):
        return self.input.dataset(split, global_batch_size, input_context, seed=self.seed)

    def num_examples(self, split: str) -> int:
        return self.input.num_examples(split)

    def validate_data(self, splits: Sequence[str]) -> None:
        self.input.validate(splits)

    # ------------------------------------------------------------------ training

    def losses(self, outputs: dict, labels: dict) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """(model loss, class loss, box loss) of one replica's batch, each normalised by its
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
        return class_loss + self.box_loss_weight * box_loss, class_loss, box_loss

    def train_step(self, inputs, models, optimizers, metrics, global_batch_size):
        images, labels = inputs
        model, optimizer = models["model"], optimizers["model"]
        replicas = tf.distribute.get_strategy().num_replicas_in_sync
        with tf.GradientTape() as tape:
            outputs = model(images, training=True)
            outputs = tf.nest.map_structure(lambda x: tf.cast(x, tf.float32), outputs)
            model_loss, class_loss, box_loss = self.losses(outputs, labels)
            penalty = optimization.l2_penalty(optimizer, model.trainable_variables)
            loss = (model_loss + penalty + tf.add_n(model.losses or [0.0])) / replicas
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return {"loss": model_loss, "class_loss": class_loss, "box_loss": box_loss}

    # ------------------------------------------------------------------ evaluation

    def validation_step(self, inputs, models, metrics, evaluation):
        images, labels = inputs
        return detect_for_coco(models["model"], images, labels)  # boxes in original pixels

    def aggregate_logs(self, state, step_outputs, evaluation):
        """Feeds one step's gathered detections (padding images dropped) to COCO AP."""
        return add_to_coco(state, step_outputs, self.input.annotation_file(evaluation.split))

    def reduce_aggregated_logs(self, state, evaluation) -> dict[str, float]:
        return state.result() if state is not None else {}

    # ------------------------------------------------------------------ export

    def serving_signatures(self, models: Models):
        model = models["model"]
        return {"serving_default": jpeg_serving(self.input, model, max_detections(model))}

    def draw_prediction(self, models: Models, image_bytes: bytes) -> tuple[np.ndarray, str]:
        """The image with each detection scoring at least `draw_score_threshold` boxed and
        labelled (category name, score); the summary lists them."""
        serve = self.serving_signatures(models)["serving_default"]
        return draw_detections(serve, self.input, image_bytes, self.draw_score_threshold)
