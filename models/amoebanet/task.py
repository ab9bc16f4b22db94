"""AmoebaNet's training extras on the shared image-classification task."""

from __future__ import annotations

import gin
import tensorflow as tf

from models.amoebanet.model import AmoebaNet
from models.core.tasks.image_classification import ImageClassificationTask


@gin.configurable
class AmoebaNetTask(ImageClassificationTask):
    """Adds the auxiliary head's softmax loss (weight `aux_loss_weight`, same label smoothing)
    and the drop-path ramp (progress = step / total steps, the reference's
    drop_connect_version 'v1') to image classification."""

    def __init__(
        self, data_dir: str | None = None, seed: int | None = None, aux_loss_weight: float = 0.4
    ):
        super().__init__(data_dir=data_dir, seed=seed)
        self.aux_loss_weight = aux_loss_weight
        self.total_steps: int | None = None

    def build_optimizers(self, models, schedule_args):
        self.total_steps = schedule_args["total_steps"]
        return super().build_optimizers(models, schedule_args)

    def per_example_loss(self, model, optimizer, images, labels):
        if not isinstance(model, AmoebaNet):
            return super().per_example_loss(model, optimizer, images, labels)
        progress = tf.cast(optimizer.iterations, tf.float32) / float(self.total_steps or 1)
        model.drop_path_progress.assign(tf.minimum(progress, 1.0))
        logits, aux = model.logits_and_aux(images, training=True)
        logits = tf.cast(logits, tf.float32)
        per_example = self._per_example_loss(labels, logits)
        if aux is not None:
            aux_loss = self._per_example_loss(labels, tf.cast(aux, tf.float32))
            per_example += self.aux_loss_weight * aux_loss
        return logits, per_example
