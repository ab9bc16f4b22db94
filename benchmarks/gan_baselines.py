"""What a GAN recipe's FID target must beat, on the same classifier and evaluation split:

    python -m benchmarks.gan_baselines --recipe=dcgan/default [--json]

- `untrained_generator`: the recipe's generator as initialised, on the evaluation's noise;
- `class_means`: for each evaluation image, the mean training image of its class (a blurry
  but right-on-average generator);
- `training_split`: real training images, as many as the split holds (the floor a perfect
  generator reaches at this sample size).
"""

from __future__ import annotations

import gin
import numpy as np
import tensorflow as tf
from absl import flags

import models  # noqa: F401 - first: it quiets TensorFlow's C++ logs before TensorFlow loads
from benchmarks import output
from benchmarks.recipes import define_flags, load_recipe
from models.core.errors import UsageError
from models.core.recipe import RunSpec
from models.tasks.image_generation import ImageGenerationTask
from models.tasks.sample_quality import frechet_distance, inception_score

FLAGS = flags.FLAGS
define_flags("dcgan/default")
flags.DEFINE_string("data_dir", None, "Dataset directory (default: the recipe's built-in data).")


def _split(task: ImageGenerationTask, split: str, count: int) -> tuple[np.ndarray, np.ndarray]:
    """(images in [-1, 1], labels) of `count` examples of a split (training: shuffled)."""
    images, labels = [], []
    for image, label in task.input.dataset(split, 1, None, seed=0).take(count):
        images.append(image.numpy()[0])
        labels.append(int(label.numpy()[0]))
    return np.stack(images), np.array(labels)


def baselines(task: ImageGenerationTask, split: str) -> dict[str, dict[str, float]]:
    """FID and Inception Score of the three baselines against `split`."""
    real, labels = _split(task, split, task.num_examples(split))
    train, train_labels = _split(task, "train", task.num_examples("train"))
    generator = task.build_models()["generator"]
    noise = tf.random.stateless_normal([len(real), task.z_dim], seed=[task.seed, 0])
    untrained = generator({"noise": noise, "label": labels}, training=False)
    means = {c: train[train_labels == c].mean(axis=0) for c in np.unique(train_labels)}
    candidates = {
        "untrained_generator": np.asarray(untrained, np.float32),
        "class_means": np.stack([means[c] for c in labels]),
        "training_split": train[: len(real)],
    }
    network = task.feature_network()
    real_features = network(real).features
    rows = {}
    for name, images in candidates.items():
        scores = network(images)
        rows[name] = {
            task.metric_name("fid"): frechet_distance(real_features, scores.features),
            task.metric_name("inception_score"): inception_score(scores.probabilities),
        }
    return rows


def compute(_: list[str]) -> dict:
    recipe = load_recipe(FLAGS.recipe, FLAGS.model)
    spec = RunSpec().check()
    task = spec.task(model=recipe.model, data_dir=FLAGS.data_dir, seed=0)
    if not isinstance(task, ImageGenerationTask):
        raise UsageError(f"--recipe={FLAGS.recipe} does not train a GAN (ImageGenerationTask)")
    split = gin.query_parameter("evaluation.split") if _bound("evaluation.split") else None
    split = split or "validation"
    output.progress(f"scoring baselines of {recipe.path} against its {split} split")
    return {"recipe": recipe.path, "split": split, "baselines": baselines(task, split)}


def _bound(name: str) -> bool:
    try:
        gin.query_parameter(name)
    except ValueError:
        return False
    return True


def render(result: dict) -> str:
    rows = result["baselines"]
    metrics = list(next(iter(rows.values())))
    lines = [
        f"{result['recipe']} against its {result['split']} split",
        "| baseline | " + " | ".join(metrics) + " |",
        "|---" * (len(metrics) + 1) + "|",
    ]
    for name, values in rows.items():
        lines.append(f"| {name} | " + " | ".join(f"{values[m]:.2f}" for m in metrics) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    output.run_cli("gan_baselines", compute, render)
