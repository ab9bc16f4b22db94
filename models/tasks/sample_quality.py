"""Sample quality of a generator: Fréchet distance (Heusel et al. 2017) and Inception Score
(Salimans et al. 2016) on the features and class predictions of a classifier.

The classifier is either the zoo's own small convnet, trained once on the training split of
the data the GAN learns (cached; its metrics are named after the data, `fid_digits`, and are
NOT comparable to published Inception-v3 FIDs), or Inception-v3 with weights a user has
(`sample_quality.inception_weights = "/path/inception_v3.h5"`): the standard FID and IS.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import gin
import numpy as np
import tensorflow as tf
import tf_keras
from scipy import linalg

from models.core.errors import UsageError
from models.core.gin_types import check_field_types

INCEPTION_SIZE = 299
_FEATURE_WIDTH = 64
CLASSIFIER_VERSION = 2  # in the cache key: a changed classifier is trained afresh


def frechet_distance(features_a: np.ndarray, features_b: np.ndarray) -> float:
    """||mu_a - mu_b||^2 + Tr(S_a + S_b - 2 (S_a S_b)^(1/2)) of two [N, D] feature sets."""
    mu_a, mu_b = features_a.mean(axis=0), features_b.mean(axis=0)
    cov_a = np.cov(features_a.astype(np.float64), rowvar=False)
    cov_b = np.cov(features_b.astype(np.float64), rowvar=False)
    with warnings.catch_warnings():  # a singular product (dead feature units) is expected
        warnings.simplefilter("ignore", linalg.LinAlgWarning)
        root = linalg.sqrtm(cov_a @ cov_b)
    if not np.isfinite(root).all():  # singular product: offset both, as Heusel et al.'s code
        offset = np.eye(cov_a.shape[0]) * 1e-6
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", linalg.LinAlgWarning)
            root = linalg.sqrtm((cov_a + offset) @ (cov_b + offset))
    trace = np.trace(cov_a) + np.trace(cov_b) - 2.0 * np.trace(root.real)
    return float(np.sum((mu_a - mu_b) ** 2) + trace)


def inception_score(probabilities: np.ndarray) -> float:
    """exp(E_x KL(p(y|x) || p(y))) of [N, classes] class probabilities (one split)."""
    p = np.clip(probabilities.astype(np.float64), 1e-12, 1.0)
    marginal = p.mean(axis=0, keepdims=True)
    return float(np.exp(np.mean(np.sum(p * (np.log(p) - np.log(marginal)), axis=1))))


@dataclass(frozen=True)
class Scores:
    """Features and class probabilities of a batch of images, from one classifier."""

    features: np.ndarray
    probabilities: np.ndarray


class FeatureNetwork:
    """Images in [-1, 1] -> Scores; `suffix` names the metrics ("" for Inception-v3)."""

    def __init__(self, model: tf_keras.Model, suffix: str, image_size: int | None = None):
        self.model, self.suffix, self.image_size = model, suffix, image_size

    def __call__(self, images: np.ndarray, batch_size: int = 256) -> Scores:
        features, probabilities = [], []
        for start in range(0, len(images), batch_size):
            batch = tf.convert_to_tensor(images[start : start + batch_size], tf.float32)
            if self.image_size is not None:
                batch = tf.image.resize(batch, [self.image_size, self.image_size])
            feature, logits = self.model(batch, training=False)
            features.append(feature.numpy())
            probabilities.append(tf.nn.softmax(logits).numpy())
        return Scores(np.concatenate(features), np.concatenate(probabilities))

    def metric(self, name: str) -> str:
        return f"{name}_{self.suffix}" if self.suffix else name


@gin.configurable("sample_quality")
@dataclass
class SampleQualitySettings:
    """`inception_weights`: a Keras Inception-v3 weights file (.h5, with the top) for the
    standard FID/IS; unset, the zoo's classifier is trained for `classifier_epochs` on the
    training split and cached under the data cache."""

    inception_weights: str | None = None
    classifier_epochs: int = 10

    def __post_init__(self):
        check_field_types(self, "sample_quality")
        if self.classifier_epochs < 1:
            raise UsageError("sample_quality.classifier_epochs must be >= 1")


def inception_network(weights: str) -> FeatureNetwork:
    """Inception-v3 (tf_keras.applications) with the user's weights: pool features, logits."""
    if not tf.io.gfile.exists(weights):
        raise UsageError(f"sample_quality.inception_weights={weights}: no such file")
    net = tf_keras.applications.InceptionV3(weights=None, classifier_activation=None)
    try:
        net.load_weights(weights)
    except (ValueError, OSError) as error:
        raise UsageError(f"sample_quality.inception_weights={weights}: {error}") from None
    pooled = net.get_layer("avg_pool").output
    return FeatureNetwork(tf_keras.Model(net.input, [pooled, net.output]), "", INCEPTION_SIZE)


def classifier(image_size: int, num_classes: int) -> tf_keras.Model:
    """The zoo's feature classifier: three convs (two strided), flattened, a 64-d feature
    layer, logits (98% on the digits' validation split after 10 epochs)."""
    images = tf_keras.Input([image_size, image_size, 3])
    x = images
    for width, stride in ((32, 1), (64, 2), (128, 2)):
        x = tf_keras.layers.Conv2D(width, 3, stride, padding="same", activation="relu")(x)
    x = tf_keras.layers.Flatten()(x)
    features = tf_keras.layers.Dense(_FEATURE_WIDTH, activation="relu", name="features")(x)
    logits = tf_keras.layers.Dense(num_classes, name="logits")(features)
    return tf_keras.Model(images, [features, logits], name="feature_classifier")


def trained_classifier(
    name: str,
    image_size: int,
    num_classes: int,
    train: Callable[[], tf.data.Dataset],
    epochs: int,
    identity: str,
) -> FeatureNetwork:
    """The zoo's classifier for data `identity` (its directory), trained once on `train()`'s
    (images in [-1, 1], labels) batches and cached; metrics are suffixed with `name`."""
    from models.data.builtin.cache import build_once

    key = hashlib.sha256(
        f"{CLASSIFIER_VERSION}|{identity}|{image_size}|{num_classes}|{epochs}".encode()
    ).hexdigest()

    def write(directory: Path) -> None:
        model = classifier(image_size, num_classes)
        logits = tf_keras.Model(model.input, model.outputs[1])  # the same layers
        logits.compile(
            optimizer=tf_keras.optimizers.Adam(1e-3),
            loss=tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            metrics=["accuracy"],
        )
        history = logits.fit(train(), epochs=epochs, verbose=0)
        model.save_weights(str(directory / "classifier.weights.h5"))
        accuracy = float(history.history["accuracy"][-1])
        info = {"data": identity, "epochs": epochs, "train_accuracy": accuracy}
        (directory / "dataset_info.json").write_text(json.dumps(info, indent=1))

    directory = Path(build_once(f"sample-quality-{name}-{key[:12]}", write))
    model = classifier(image_size, num_classes)
    model.load_weights(str(directory / "classifier.weights.h5"))
    return FeatureNetwork(model, name)
