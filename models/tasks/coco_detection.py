"""What every detector task on the shared COCO-schema pipeline does alike (RetinaNet's
DetectionTask, Mask R-CNN's InstanceSegmentationTask): the input, the training step around the
task's own losses, COCO box (and mask) AP out of the graph, the JPEG serving signature and the
drawn prediction. A task adds its losses and what its model takes in training beside images."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from models.core import optimization
from models.core.task import Models, Task
from models.data.detection import DetectionInput
from models.tasks.coco_metrics import METRIC_RANGES
from models.tasks.detection_outputs import (
    BOX_OUTPUTS,
    add_to_coco,
    detect_for_coco,
    draw_detections,
    jpeg_serving,
    mask_size,
    max_detections,
)


class CocoDetectionTask(Task):
    """A detector of `model` (a registered variant) on `input`; `include_mask` adds masks to
    evaluation (mask AP) and export. Subclasses define `losses` and, where their model needs
    ground truth in training, `training_inputs`."""

    primary_metric = "AP"
    metric_ranges = METRIC_RANGES
    include_mask = False

    def __init__(
        self, model: str, data: DetectionInput, seed: int | None, draw_score_threshold: float
    ):
        self.model, self.input, self.seed = model, data, seed
        self.draw_score_threshold = draw_score_threshold

    # ------------------------------------------------------------------ training

    def losses(self, outputs: dict, labels: dict) -> dict[str, tf.Tensor]:
        """One replica's `model_loss` (what is minimised, before L2) and its logged terms."""
        raise NotImplementedError

    def training_inputs(self, labels: dict) -> dict[str, tf.Tensor]:
        """What the model takes in training beside the images (two-stage: ground truth)."""
        return {}

    def train_step(self, inputs, models, optimizers, metrics, global_batch_size):
        images, labels = inputs
        model, optimizer = models["model"], optimizers["model"]
        replicas = tf.distribute.get_strategy().num_replicas_in_sync
        with tf.GradientTape() as tape:
            outputs = model(images, **self.training_inputs(labels), training=True)
            outputs = tf.nest.map_structure(lambda x: tf.cast(x, tf.float32), outputs)
            losses = self.losses(outputs, labels)
            penalty = optimization.l2_penalty(optimizer, model.trainable_variables)
            extra = tf.add_n(model.losses or [0.0])
            loss = (losses["model_loss"] + penalty + extra) / replicas
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return {"loss": losses.pop("model_loss"), **losses}

    # ------------------------------------------------------------------ evaluation

    def validation_step(self, inputs, models, metrics, evaluation):
        images, labels = inputs
        keys = BOX_OUTPUTS + (("detection_masks",) if self.include_mask else ())
        return detect_for_coco(models["model"], images, labels, keys)  # boxes: original pixels

    def aggregate_logs(self, state, step_outputs, evaluation):
        """Feeds one step's gathered detections (and masks; padding dropped) to COCO AP."""
        annotations = self.input.annotation_file(evaluation.split)
        return add_to_coco(state, step_outputs, annotations, include_mask=self.include_mask)

    def reduce_aggregated_logs(self, state, evaluation) -> dict[str, float]:
        return state.result() if state is not None else {}

    # ------------------------------------------------------------------ export

    def serving_signatures(self, models: Models):
        model = models["model"]
        serve = jpeg_serving(self.input, model, max_detections(model), mask_size(model))
        return {"serving_default": serve}

    def draw_prediction(self, models: Models, image_bytes: bytes) -> tuple[np.ndarray, str]:
        """The image with each detection scoring at least `draw_score_threshold` boxed and
        labelled (category name, score), its mask tinted where the model has masks; the
        summary lists them."""
        serve = self.serving_signatures(models)["serving_default"]
        return draw_detections(serve, self.input, image_bytes, self.draw_score_threshold)
