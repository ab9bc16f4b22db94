"""Small test-only tasks that use the task contract as the coming families will: two models
with two optimisers (GANs), nested (groundtruth, prediction) eval outputs scored in Python
(COCO, BLEU), a lower-is-better metric (WER, FID), datasets of unknown size (train by
steps) and a backbone restored from another run (detection, fine-tuning)."""

from __future__ import annotations

import gin
import numpy as np
import tensorflow as tf
import tf_keras

from models.core.task import Task

REAL_MEAN = 2.0


def _scaled(per_example: tf.Tensor, global_batch_size: int) -> tf.Tensor:
    return tf.reduce_sum(per_example) / global_batch_size


def _batch(context, global_batch_size: int) -> int:
    return context.get_per_replica_batch_size(global_batch_size) if context else global_batch_size


class AdversarialTask(Task):
    """A 1-D GAN: the generator maps fixed noise to samples, the discriminator tells them from
    real samples (REAL_MEAN); every step sees the same batch, so runs are reproducible."""

    primary_metric = "distance"
    lower_is_better = frozenset({"distance"})

    def __init__(self, model: str = "contract_gan", data_dir=None, seed=None):
        self.seed = seed or 0

    def build_models(self):
        generator = tf_keras.Sequential(
            [tf_keras.layers.Dense(4, "relu"), tf_keras.layers.Dense(1)]
        )
        discriminator = tf_keras.Sequential(
            [tf_keras.layers.Dense(4, "relu"), tf_keras.layers.Dense(1)]
        )
        generator.build((None, 2))
        discriminator.build((None, 1))
        return {"generator": generator, "discriminator": discriminator}

    def build_inputs(self, split, global_batch_size, input_context):
        batch = _batch(input_context, global_batch_size)
        noise = tf.random.stateless_normal([batch, 2], seed=[self.seed, 1])
        real = REAL_MEAN + 0.1 * tf.random.stateless_normal([batch, 1], seed=[self.seed, 2])
        dataset = tf.data.Dataset.from_tensors((real, noise))
        return dataset.repeat() if split == "train" else dataset.repeat(4)

    def num_examples(self, split):
        return None

    def train_step(self, inputs, models, optimizers, metrics, global_batch_size):
        real, noise = inputs
        generator, discriminator = models["generator"], models["discriminator"]
        with tf.GradientTape() as tape:
            fake = generator(noise, training=True)
            d_example = tf.nn.softplus(-discriminator(real)) + tf.nn.softplus(discriminator(fake))
            d_loss = _scaled(d_example, global_batch_size)
        variables = discriminator.trainable_variables
        optimizers["discriminator"].apply_gradients(
            zip(tape.gradient(d_loss, variables), variables, strict=True)
        )
        with tf.GradientTape() as tape:
            g_example = tf.nn.softplus(-discriminator(generator(noise, training=True)))
            g_loss = _scaled(g_example, global_batch_size)
        variables = generator.trainable_variables
        optimizers["generator"].apply_gradients(
            zip(tape.gradient(g_loss, variables), variables, strict=True)
        )
        return {
            "discriminator_loss": tf.reduce_mean(d_example),
            "generator_loss": tf.reduce_mean(g_example),
        }

    def validation_step(self, inputs, models, metrics, evaluation):
        _, noise = inputs
        return {"fake": models["generator"](noise, training=False)}

    def aggregate_logs(self, state, step_outputs, evaluation):
        return (state or []) + [step_outputs["fake"]]

    def reduce_aggregated_logs(self, state, evaluation):
        return {"distance": float(abs(np.concatenate(state).mean() - REAL_MEAN))}


class DetectionLikeTask(Task):
    """Evaluation returns {"detections": ({"id", "label"}, {"score", "box"})} per replica; the
    task concatenates the gathered numpy values and scores them in Python."""

    primary_metric = "mean_score"
    examples = 36  # not a multiple of the eval batch: the last batch is padded with id -1

    def __init__(self, model: str = "contract_detector", data_dir=None, seed=None):
        self.seen_ids: np.ndarray | None = None
        self.batch_sizes: np.ndarray | None = None  # one value per replica and step

    def build_models(self):
        model = tf_keras.Sequential([tf_keras.layers.Dense(5)])
        model.build((None, 1))
        return {"model": model}

    def build_inputs(self, split, global_batch_size, input_context):
        ids = tf.data.Dataset.range(self.examples).concatenate(
            tf.data.Dataset.from_tensors(tf.constant(-1, tf.int64)).repeat()
        )
        return ids.batch(_batch(input_context, global_batch_size), drop_remainder=True)

    def num_examples(self, split):
        return self.examples

    def train_step(self, inputs, models, optimizers, metrics, global_batch_size):
        model = models["model"]
        with tf.GradientTape() as tape:
            out = model(tf.cast(inputs[:, None], tf.float32) / self.examples)
            per_example = tf.reduce_sum(out**2, axis=1)
            loss = _scaled(per_example, global_batch_size)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizers["model"].apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return {"loss": tf.reduce_mean(per_example)}

    def validation_step(self, inputs, models, metrics, evaluation):
        out = models["model"](tf.cast(inputs[:, None], tf.float32) / self.examples)
        groundtruth = {"id": inputs, "label": inputs % 3}
        prediction = {"score": tf.nn.sigmoid(out[:, 0]), "box": out[:, 1:]}
        return {"detections": (groundtruth, prediction), "batch_size": tf.size(inputs)}

    def aggregate_logs(self, state, step_outputs, evaluation):
        groundtruth, prediction = step_outputs["detections"]
        rows = {**groundtruth, **prediction, "batch_size": step_outputs["batch_size"]}
        state = state or {k: [] for k in rows}
        for key, value in rows.items():
            state[key].append(value)
        return state

    def reduce_aggregated_logs(self, state, evaluation):
        joined = {k: np.concatenate(v) for k, v in state.items()}
        valid = joined["id"] >= 0
        self.seen_ids, self.batch_sizes = joined["id"][valid], joined["batch_size"]
        return {
            "mean_score": float(joined["score"][valid].mean()),
            "box_sum": float(joined["box"][valid].sum()),
            "examples_read": float(joined["batch_size"].sum()),
        }


class RegressionTask(Task):
    """Learns y = 3x; the out-of-graph metrics `mse` and `mae` improve downwards."""

    primary_metric = "mse"
    lower_is_better = frozenset({"mse", "mae", "loss"})

    def __init__(self, model: str = "contract_regressor", data_dir=None, seed=None):
        self.seed = seed or 0

    def build_models(self):
        model = tf_keras.Sequential([tf_keras.layers.Dense(1, kernel_initializer="zeros")])
        model.build((None, 1))
        return {"model": model}

    def build_inputs(self, split, global_batch_size, input_context):
        x = tf.random.stateless_uniform([64, 1], seed=[self.seed, 3], minval=-1.0)
        examples = tf.data.Dataset.from_tensor_slices((x, 3.0 * x))
        batch = _batch(input_context, global_batch_size)
        if split == "train":
            return examples.repeat().batch(batch, drop_remainder=True)
        return examples.batch(batch)  # finite: evaluation reads it to its end

    def num_examples(self, split):
        return None

    def train_step(self, inputs, models, optimizers, metrics, global_batch_size):
        x, y = inputs
        model = models["model"]
        with tf.GradientTape() as tape:
            per_example = (model(x)[:, 0] - y[:, 0]) ** 2
            loss = _scaled(per_example, global_batch_size)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizers["model"].apply_gradients(zip(grads, model.trainable_variables, strict=True))
        return {"loss": tf.reduce_mean(per_example)}

    def validation_step(self, inputs, models, metrics, evaluation):
        x, y = inputs
        return {"error": models["model"](x)[:, 0] - y[:, 0]}

    def aggregate_logs(self, state, step_outputs, evaluation):
        return (state or []) + [step_outputs["error"]]

    def reduce_aggregated_logs(self, state, evaluation):
        errors = np.concatenate(state)
        return {
            "mse": float((errors**2).mean()),
            "mae": float(np.abs(errors).mean()),
            "examples": float(len(errors)),
        }


class TinyNet(tf_keras.Model):
    """A backbone and a head, as detection and classification models are built."""

    def __init__(self, width: int, classes: int = 3):
        super().__init__()
        self.backbone = tf_keras.Sequential([tf_keras.layers.Dense(width, "relu")])
        self.head = tf_keras.layers.Dense(classes)

    def call(self, inputs, training=None):
        return self.head(self.backbone(inputs))


class BackboneTask(RegressionTask):
    """The regression task on a TinyNet (`width` sets the backbone's width)."""

    width = 8

    def build_models(self):
        model = TinyNet(self.width)
        model.build((None, 1))
        return {"model": model}


def register_for_cli() -> None:
    """Registers the adversarial task's variant, for `python -m`-style runs in a subprocess
    (only there: the registry's test over every variant must not see test variants)."""
    from models.core.registry import register_model

    gin.external_configurable(AdversarialTask)
    register_model("contract_gan", family="contract", description="test-only 1-D GAN")(
        lambda **_: None
    )
