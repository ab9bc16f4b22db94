"""Image generation with a GAN (core.adversarial.AdversarialPair): two models, two optimisers,
the losses and penalties of Compare GAN (Kurach et al. 2019), FID as a lower-is-better target.

One training step is one generator update after `disc_iters` discriminator updates, each on its
own batch of `train.global_batch_size` real images (as Compare GAN and BigGAN count steps).
Noise and fake labels are stateless random numbers seeded by the optimisers' step, the replica
and the run's seed: every replica draws its own, and a resumed run draws what it would have.
"""

from __future__ import annotations

from collections.abc import Sequence

import gin
import numpy as np
import tensorflow as tf

from models.core import registry
from models.core.errors import UsageError, check_choice
from models.core.task import Models, Task
from models.data.classification import ClassificationInput
from models.tasks import sample_quality
from models.tasks.adversarial import AdversarialPair
from models.tasks.drawing import image_grid

LOSSES = ("non_saturating", "wasserstein", "hinge", "least_squares")
PENALTIES = ("none", "wgan_gp", "dragan")
GRID = 8  # sample grids are GRID x GRID images


def discriminator_loss(loss: str, real: tf.Tensor, fake: tf.Tensor) -> tf.Tensor:
    """Per-example discriminator loss from real and fake logits."""
    if loss == "non_saturating":
        return tf.nn.softplus(-real) + tf.nn.softplus(fake)
    if loss == "wasserstein":
        return fake - real
    if loss == "hinge":
        return tf.nn.relu(1.0 - real) + tf.nn.relu(1.0 + fake)
    # least squares (Mao et al. 2017) on the sigmoid outputs, as Compare GAN
    return 0.5 * (tf.square(tf.sigmoid(real) - 1.0) + tf.square(tf.sigmoid(fake)))


def generator_loss(loss: str, fake: tf.Tensor) -> tf.Tensor:
    """Per-example generator loss from the discriminator's logits on fakes."""
    if loss == "non_saturating":
        return tf.nn.softplus(-fake)
    if loss in ("wasserstein", "hinge"):
        return -fake
    return 0.5 * tf.square(tf.sigmoid(fake) - 1.0)


def orthogonal_penalty(variables: Sequence[tf.Variable]) -> tf.Tensor:
    """BigGAN's orthogonal regularisation: sum ||W^T W * (1 - I)||_F^2 over every kernel
    (reshaped to [fan_in, fan_out])."""
    terms = []
    for variable in variables:
        if variable.shape.rank < 2 or "kernel" not in variable.name:
            continue
        w = tf.reshape(tf.cast(variable, tf.float32), [-1, variable.shape[-1]])
        gram = tf.matmul(w, w, transpose_a=True)
        terms.append(tf.reduce_sum(tf.square(gram * (1.0 - tf.eye(tf.shape(gram)[0])))))
    return tf.add_n(terms) if terms else tf.constant(0.0)


@gin.configurable
class ImageGenerationTask(Task):
    """A GAN on the shared ImageNet-schema image pipeline (images scaled to [-1, 1] by the
    recipe's `classification_input.mean_rgb`/`stddev_rgb` = 127.5).

    `loss`: non_saturating (Goodfellow et al.), wasserstein, hinge or least_squares;
    `penalty`: none, wgan_gp (Gulrajani et al., on interpolates of real and fake) or dragan
    (Kodali et al., around perturbed reals), weighted by `penalty_weight`; `disc_iters`
    discriminator steps per generator step; `orthogonal_weight` > 0 adds BigGAN's orthogonal
    regularisation to the generator. Learning rates, optimisers and the generator's weight
    average are gin bindings scoped by model: `generator/learning_rate.base_lr`,
    `discriminator/optimizer.beta_1`, `generator/optimizer.ema_decay`.

    Evaluation generates as many images as the split holds (labels as the split's when the
    GAN is class-conditional) and scores them against the split: FID and Inception Score of
    `sample_quality`'s classifier, and, conditional, the classifier's accuracy on the labels
    asked for; an 8x8 sample grid goes to the evaluation folder and TensorBoard.
    """

    lower_is_better = frozenset({"loss"})
    metric_ranges = {"accuracy": (0.0, 1.0), "fid": (0.0, float("inf"))}

    def __init__(
        self,
        model: str,
        data_dir: str | None = None,
        seed: int | None = None,
        loss: str = "non_saturating",
        penalty: str = "none",
        penalty_weight: float = 10.0,
        disc_iters: int = 1,
        orthogonal_weight: float = 0.0,
    ):
        check_choice(loss, LOSSES, "ImageGenerationTask.loss")
        check_choice(penalty, PENALTIES, "ImageGenerationTask.penalty")
        if disc_iters < 1:
            raise UsageError("ImageGenerationTask.disc_iters must be >= 1")
        self.model, self.seed = model, seed or 0
        self.input = ClassificationInput(data_dir=data_dir)
        self.loss, self.penalty, self.penalty_weight = loss, penalty, penalty_weight
        self.disc_iters, self.orthogonal_weight = disc_iters, orthogonal_weight
        self.quality = sample_quality.SampleQualitySettings()
        self.conditional = False
        self._network: sample_quality.FeatureNetwork | None = None
        self._writers: dict[str, tf.summary.SummaryWriter] = {}  # one event file per folder
        self.primary_metric = self.metric_name("fid")

    # ------------------------------------------------------------ models and data

    def build_models(self) -> Models:
        pair = registry.create_model(
            self.model, num_classes=self.input.num_classes, image_size=self.input.image_size
        )
        if not isinstance(pair, AdversarialPair):
            raise UsageError(f"run.model = '{self.model}' is not a GAN (ImageGenerationTask)")
        self.z_dim, self.conditional = pair.z_dim, pair.num_classes > 0
        return {"generator": pair.generator, "discriminator": pair.discriminator}

    def build_inputs(self, split, global_batch_size, input_context):
        """Training batches hold `disc_iters` discriminator batches each."""
        batch = global_batch_size * (self.disc_iters if split == "train" else 1)
        return self.input.dataset(split, batch, input_context, seed=self.seed)

    def synthetic_inputs(self, global_batch_size, input_context):
        """One random batch of `disc_iters` discriminator batches, repeated (no data read)."""
        batch = global_batch_size * self.disc_iters
        return self.input.synthetic_dataset(batch, input_context, self.seed)

    def is_lower_better(self, metric: str) -> bool:
        name = metric.rsplit("/", 1)[-1]
        return name.startswith("fid") or super().is_lower_better(metric)

    def metric_range(self, metric: str):
        name = metric.rsplit("/", 1)[-1]
        return (0.0, float("inf")) if name.startswith("fid") else super().metric_range(metric)

    # ------------------------------------------------------------ training

    def _latents(self, batch: int, salt: tf.Tensor, step: tf.Tensor) -> dict[str, tf.Tensor]:
        """Stateless noise and uniform fake labels for one batch of this replica."""
        replica = tf.distribute.get_replica_context().replica_id_in_sync_group
        seed = tf.stack(
            [tf.cast(step, tf.int32), tf.cast(replica, tf.int32) * 1009 + salt + self.seed]
        )
        noise = tf.random.stateless_normal([batch, self.z_dim], seed=seed)
        labels = tf.random.stateless_uniform(
            [batch],
            seed=tf.reverse(seed, [0]),
            maxval=max(self.input.num_classes, 1),
            dtype=tf.int32,
        )
        return {"noise": noise, "label": labels}

    def _penalty(self, discriminator, real, fake, labels, seed) -> tf.Tensor:
        """Per-example gradient penalty (||grad D(x_hat)|| - 1)^2 at WGAN-GP's interpolates
        or DRAGAN's perturbed reals."""
        batch = tf.shape(real)[0]
        alpha = tf.random.stateless_uniform([batch, 1, 1, 1], seed=seed)
        if self.penalty == "wgan_gp":
            points = real + alpha * (fake - real)
        else:
            _, variance = tf.nn.moments(real, axes=[0, 1, 2, 3])
            noise = tf.random.stateless_uniform(tf.shape(real), seed=tf.reverse(seed, [0]))
            points = real + alpha * 0.5 * tf.sqrt(variance) * noise
        with tf.GradientTape() as tape:
            tape.watch(points)
            logits = discriminator({"image": points, "label": labels}, training=True)
        grads = tape.gradient(logits, points)
        norms = tf.sqrt(tf.reduce_sum(tf.square(grads), axis=[1, 2, 3]) + 1e-12)
        return tf.square(norms - 1.0)

    def _discriminator_step(self, models, optimizer, real, labels, salt, global_batch_size):
        generator, discriminator = models["generator"], models["discriminator"]
        step = optimizer.iterations
        latents = self._latents(tf.shape(real)[0], salt, step)
        fake = tf.stop_gradient(generator(latents, training=True))
        with tf.GradientTape() as tape:
            d_real = discriminator({"image": real, "label": labels}, training=True)
            d_fake = discriminator({"image": fake, "label": latents["label"]}, training=True)
            per_example = discriminator_loss(self.loss, d_real, d_fake)
            penalty = tf.zeros_like(per_example)
            if self.penalty != "none":
                seed = tf.stack([tf.cast(step, tf.int32), salt + 7919])
                penalty = self._penalty(discriminator, real, fake, labels, seed)
            total = per_example + self.penalty_weight * penalty
            loss = tf.reduce_sum(total) / global_batch_size
        variables = discriminator.trainable_variables
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables, strict=True))
        return {
            "discriminator_loss": tf.reduce_mean(per_example),
            "penalty": tf.reduce_mean(penalty),
            "real_logit": tf.reduce_mean(d_real),
            "fake_logit": tf.reduce_mean(d_fake),
        }

    def _generator_step(self, models, optimizer, batch, global_batch_size):
        generator, discriminator = models["generator"], models["discriminator"]
        latents = self._latents(batch, tf.constant(104729), optimizer.iterations)
        replicas = tf.distribute.get_strategy().num_replicas_in_sync
        with tf.GradientTape() as tape:
            fake = generator(latents, training=True)
            d_fake = discriminator({"image": fake, "label": latents["label"]}, training=True)
            per_example = generator_loss(self.loss, d_fake)
            loss = tf.reduce_sum(per_example) / global_batch_size
            if self.orthogonal_weight:
                ortho = orthogonal_penalty(generator.trainable_variables)
                loss += self.orthogonal_weight * ortho / replicas
        variables = generator.trainable_variables
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables, strict=True))
        return {"generator_loss": tf.reduce_mean(per_example)}

    def train_step(self, inputs, models, optimizers, metrics, global_batch_size):
        images, labels = inputs
        reals = tf.split(images, self.disc_iters)
        classes = tf.split(labels, self.disc_iters)
        logs = {}
        for i, (real, label) in enumerate(zip(reals, classes, strict=True)):
            logs = self._discriminator_step(
                models, optimizers["discriminator"], real, label, i, global_batch_size
            )
        batch = tf.shape(reals[0])[0]
        logs.update(self._generator_step(models, optimizers["generator"], batch, global_batch_size))
        return logs

    # ------------------------------------------------------------ evaluation

    def metric_name(self, name: str) -> str:
        """`name` as reported: suffixed with the built-in classifier's data (`fid_digits`)."""
        if self.quality.inception_weights:
            return name
        return f"{name}_{self.input.builtin}" if self.input.builtin else f"{name}_zoo"

    def validation_step(self, inputs, models, metrics, evaluation):
        """Generates one image per real one (seeded by the batch's labels: the same noise at
        every evaluation); returns reals, fakes and labels for the aggregation."""
        images, labels = inputs
        replica = tf.distribute.get_replica_context().replica_id_in_sync_group
        positions = tf.range(1, tf.shape(labels)[0] + 1)
        seed = tf.stack([tf.reduce_sum(labels * positions) + self.seed, replica])
        noise = tf.random.stateless_normal([tf.shape(labels)[0], self.z_dim], seed=seed)
        fake = models["generator"]({"noise": noise, "label": tf.maximum(labels, 0)}, training=False)
        return {"real": images, "fake": tf.cast(fake, tf.float32), "label": labels}

    def aggregate_logs(self, state, step_outputs, evaluation):
        state = state or {"real": [], "fake": [], "label": []}
        keep = step_outputs["label"] >= 0
        for key in state:
            state[key].append(np.asarray(step_outputs[key])[keep])
        return state

    def reduce_aggregated_logs(self, state, evaluation):
        real, fake, labels = (np.concatenate(state[k]) for k in ("real", "fake", "label"))
        network = self.feature_network()
        real_scores, fake_scores = network(real), network(fake)
        metrics = {
            self.metric_name("fid"): sample_quality.frechet_distance(
                real_scores.features, fake_scores.features
            ),
            self.metric_name("inception_score"): sample_quality.inception_score(
                fake_scores.probabilities
            ),
        }
        if self.conditional and not self.quality.inception_weights:
            predicted = fake_scores.probabilities.argmax(axis=1)
            metrics[self.metric_name("class_accuracy")] = float(np.mean(predicted == labels))
        self._write_grid(fake)
        return metrics

    def feature_network(self) -> sample_quality.FeatureNetwork:
        if self._network is None:
            if self.quality.inception_weights:
                self._network = sample_quality.inception_network(self.quality.inception_weights)
            else:
                self._network = self._zoo_classifier()
        return self._network

    def _zoo_classifier(self) -> sample_quality.FeatureNetwork:
        name = self.metric_name("fid").removeprefix("fid_")

        def train() -> tf.data.Dataset:
            return self.input.dataset("train", 64, None, seed=self.seed).take(
                self.input.num_examples("train") // 64
            )

        return sample_quality.trained_classifier(
            name,
            self.input.image_size,
            self.input.num_classes,
            train,
            self.quality.classifier_epochs,
            self.input.data_dir,
        )

    def _write_grid(self, fake: np.ndarray) -> None:
        """The first GRID x GRID fakes as one PNG in the evaluation folder and TensorBoard."""
        run = self.eval_run
        if run is None or run.directory is None or len(fake) < GRID * GRID:
            return
        grid = image_grid(to_uint8(fake[: GRID * GRID]).numpy(), GRID)
        tf.io.gfile.makedirs(run.directory)
        path = run.path("samples", ".png")
        tf.io.write_file(path, tf.io.encode_png(grid))
        if run.directory not in self._writers:
            self._writers[run.directory] = tf.summary.create_file_writer(run.directory)
        writer = self._writers[run.directory]
        with writer.as_default():
            tf.summary.image("samples", grid[None], step=run.step)
        writer.flush()

    # ------------------------------------------------------------ serving

    def generate(self, models: Models, noise: tf.Tensor, labels: tf.Tensor) -> tf.Tensor:
        """uint8 images of the generator for noise [N, z_dim] and classes [N]."""
        images = models["generator"]({"noise": noise, "label": labels}, training=False)
        return to_uint8(images)

    def serving_signatures(self, models: Models):
        @tf.function(
            input_signature=[
                tf.TensorSpec([None, self.z_dim], tf.float32, name="noise"),
                tf.TensorSpec([None], tf.int32, name="label"),
            ],
            autograph=False,
        )
        def serve(noise, label):
            """uint8 [N, H, W, 3] images for noise and class labels (ignored if unconditional)."""
            return {"images": self.generate(models, noise, label)}

        return {"serving_default": serve}

    def draw_samples(self, models: Models, count: int) -> tuple[tf.Tensor, str]:
        """A grid of `count` samples (classes in turn when conditional) for --mode=predict."""
        seed = [self.seed, 0]
        noise = tf.random.stateless_normal([count, self.z_dim], seed=seed)
        labels = tf.range(count, dtype=tf.int32) % max(self.input.num_classes, 1)
        columns = int(np.ceil(np.sqrt(count)))
        grid = image_grid(self.generate(models, noise, labels).numpy(), columns)
        return grid, f"{count} samples, {columns} a row"


def to_uint8(images) -> tf.Tensor:
    """[-1, 1] floats -> uint8 pixels."""
    pixels = (tf.cast(images, tf.float32) + 1.0) * 127.5
    return tf.cast(tf.clip_by_value(tf.round(pixels), 0.0, 255.0), tf.uint8)


def fid_of(network: sample_quality.FeatureNetwork, real: np.ndarray, fake: np.ndarray) -> float:
    """FID between two image sets in [-1, 1] (baselines: untrained generator, class means)."""
    return sample_quality.frechet_distance(network(real).features, network(fake).features)
