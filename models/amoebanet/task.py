"""AmoebaNet's training extra on the shared image-classification task: the drop-path ramp."""

from __future__ import annotations

import gin
import tensorflow as tf

from models.amoebanet.model import AmoebaNet
from models.tasks.image_classification import ImageClassificationTask


@gin.configurable
class AmoebaNetTask(ImageClassificationTask):
    """Ramps drop path up over training (progress = step / total steps, the reference's
    drop_connect_version 'v1'). The auxiliary head's loss is the shared task's
    (`ImageClassificationTask.aux_loss_weight`)."""

    def __init__(self, model: str, data_dir: str | None = None, seed: int | None = None):
        super().__init__(model=model, data_dir=data_dir, seed=seed)
        self.total_steps: int | None = None

    def build_optimizers(self, models, plan):
        self.total_steps = plan.total_steps
        return super().build_optimizers(models, plan)

    def per_example_loss(self, model, optimizer, images, labels):
        if isinstance(model, AmoebaNet):
            progress = tf.cast(optimizer.iterations, tf.float32) / float(self.total_steps or 1)
            model.drop_path_progress.assign(tf.minimum(progress, 1.0))
        return super().per_example_loss(model, optimizer, images, labels)
