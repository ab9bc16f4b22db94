"""Image classification on the shared ImageNet-schema pipeline; any registered classifier."""

from __future__ import annotations

import gin
import numpy as np
import tensorflow as tf
import tf_keras

from models.core import optimization, registry
from models.core.export import image_bytes_signature
from models.core.task import Models, Task
from models.data.classification import ClassificationInput
from models.tasks.auxiliary import AuxiliaryLogits
from models.tasks.drawing import draw_captions

TOP = 5  # classes a prediction shows


@gin.configurable
class ImageClassificationTask(Task):
    """Softmax cross-entropy (optional label smoothing), top-1/top-5 accuracy, image export.

    `model` is the registered variant the recipe names (`run.model = "resnet50"`), built with
    the input's classes and image size; its builder's other arguments are gin bindings
    (`resnet.width_multiplier = 0.25`). A model with an auxiliary head
    (core.auxiliary.AuxiliaryLogits) adds its loss, weighted by `aux_loss_weight` (0.4 in the
    Inception and AmoebaNet TPU references), with the same label smoothing.
    """

    primary_metric = "top_1_accuracy"

    def __init__(
        self,
        model: str,
        data_dir: str | None = None,
        seed: int | None = None,
        label_smoothing: float = 0.0,
        aux_loss_weight: float = 0.4,
    ):
        self.model = model
        self.input = ClassificationInput(data_dir=data_dir)
        self.seed = seed
        self.label_smoothing = label_smoothing
        self.aux_loss_weight = aux_loss_weight

    def build_models(self) -> Models:
        size, classes = self.input.image_size, self.input.num_classes
        return {"model": registry.create_model(self.model, num_classes=classes, image_size=size)}

    def synthetic_inputs(self, global_batch_size, input_context):
        """One random batch of the recipe's image size and classes, repeated (no data read)."""
        return self.input.synthetic_dataset(global_batch_size, input_context, self.seed)

    def build_metrics(self, training: bool, evaluation=None) -> list[tf_keras.metrics.Metric]:
        return [
            tf_keras.metrics.SparseCategoricalAccuracy("top_1_accuracy"),
            tf_keras.metrics.SparseTopKCategoricalAccuracy(5, "top_5_accuracy"),
        ]

    def _per_example_loss(self, labels: tf.Tensor, logits: tf.Tensor) -> tf.Tensor:
        one_hot = tf.one_hot(tf.maximum(labels, 0), self.input.num_classes)
        return tf_keras.losses.categorical_crossentropy(
            one_hot, logits, from_logits=True, label_smoothing=self.label_smoothing
        )

    def per_example_loss(self, model, optimizer, images, labels) -> tuple[tf.Tensor, tf.Tensor]:
        """(logits, training loss of each example): softmax cross-entropy, plus the auxiliary
        head's. Families with training-time extras override this, not the step."""
        if isinstance(model, AuxiliaryLogits):
            logits, aux = model.logits_and_aux(images, training=True)
        else:
            logits, aux = model(images, training=True), None
        logits = tf.cast(logits, tf.float32)
        per_example = self._per_example_loss(labels, logits)
        if aux is not None and self.aux_loss_weight:
            aux_loss = self._per_example_loss(labels, tf.cast(aux, tf.float32))
            per_example += self.aux_loss_weight * aux_loss
        return logits, per_example

    def train_step(self, inputs, models, optimizers, metrics, global_batch_size):
        images, labels = inputs
        model, optimizer = models["model"], optimizers["model"]
        replicas = tf.distribute.get_strategy().num_replicas_in_sync
        with tf.GradientTape() as tape:
            logits, per_example = self.per_example_loss(model, optimizer, images, labels)
            loss = tf.reduce_sum(per_example) / global_batch_size
            penalty = optimization.l2_penalty(optimizer, model.trainable_variables)
            loss += (penalty + tf.add_n(model.losses or [0.0])) / replicas
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
        for metric in metrics:
            metric.update_state(labels, logits)
        return {"loss": tf.reduce_mean(per_example)}

    def validation_step(self, inputs, models, metrics, evaluation):
        images, labels = inputs
        logits = tf.cast(models["model"](images, training=False), tf.float32)
        valid = tf.cast(labels >= 0, tf.float32)
        for metric in metrics:
            metric.update_state(tf.maximum(labels, 0), logits, sample_weight=valid)
        return {}

    def serving_signatures(self, models: Models):
        model = models["model"]

        def predict(image_bytes):
            """classes and probabilities of each image."""
            images = tf.map_fn(
                self.input.decode_for_serving,
                image_bytes,
                fn_output_signature=tf.TensorSpec(
                    [self.input.image_size, self.input.image_size, 3], self.input.dtype
                ),
            )
            logits = tf.cast(model(images, training=False), tf.float32)
            return {
                "classes": tf.argmax(logits, axis=-1, output_type=tf.int32),
                "probabilities": tf.nn.softmax(logits),
            }

        def nothing():
            return {
                "classes": tf.zeros([0], tf.int32),
                "probabilities": tf.zeros([0, self.input.num_classes], tf.float32),
            }

        return {"serving_default": image_bytes_signature(predict, nothing)}

    def draw_prediction(self, models: Models, image_bytes: bytes) -> tuple[np.ndarray, str]:
        """The image with its TOP classes and their probabilities written on it; the summary
        lists them, out of how many classes."""
        answer = self.serving_signatures(models)["serving_default"](tf.constant([image_bytes]))
        probabilities = answer["probabilities"][0].numpy()
        names = self.input.class_names()
        top = np.argsort(-probabilities)[:TOP]
        captions = [f"{names[c]}: {probabilities[c]:.1%}" for c in top]
        image = tf.io.decode_image(image_bytes, channels=3, expand_animations=False).numpy()
        summary = f"top {len(top)} of {len(names)} classes: " + ", ".join(captions)
        return draw_captions(image, captions), summary
