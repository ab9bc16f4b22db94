"""Parameters and forward FLOPs of registered models at their native input size.

    python -m benchmarks.model_stats --models=resnet50,mobilenet_v2 [--image_size=N] [--json]

FLOPs are TensorFlow's profiler count of one 1-image forward pass (BERT's: one pair of 128
tokens with 20 masked-LM predictions; the Transformer's: one sentence pair of 64 tokens a side,
teacher-forced; a GAN's: its generator drawing one image); a multiply and an add are two
float ops, so multiply-adds ~= FLOPs / 2, the figure papers print as "MAdds"/"MACs".
"""

from __future__ import annotations

import importlib

import numpy as np
from absl import flags, logging

import models  # noqa: F401 - first: it quiets TensorFlow's C++ logs before TensorFlow loads
from benchmarks import output
from benchmarks.throughput.measure import forward_flops
from models.core import registry
from models.tasks.adversarial import AdversarialPair

FLAGS = flags.FLAGS
# What a text family's FLOPs are counted on: BERT's phase-1 pair, a Transformer sentence pair.
TEXT_INPUTS = {"bert": "128 tokens, 20 masked", "transformer": "64 + 64 tokens"}
flags.DEFINE_list("models", None, "Registered model names (default: every model).")
flags.DEFINE_integer("image_size", None, "Input size for every model (default: each native).")
flags.DEFINE_integer("num_classes", 1000, "Classes of the classifier head.")


def model_stats(name: str, image_size: int | None, num_classes: int) -> dict:
    """Trainable/total parameters and forward FLOPs of one model, at its native input size
    (registry metadata) unless `image_size` is given."""
    entry = registry.model_entry(name)
    if entry.image_size is None:  # a text model: BERT's pair of 128 tokens, a sentence pair
        example_spec = importlib.import_module(f"models.{entry.family}.model").example_spec
        model, size = registry.create_model(name), None
        flops = forward_flops(model, example_spec())
    else:
        size = image_size or registry.model_entry(name).image_size
        model = registry.create_model(name, num_classes=num_classes, image_size=size)
        generative = isinstance(model, AdversarialPair)  # a GAN: its generator's FLOPs
        flops = forward_flops(model, model.example_spec() if generative else [size, size, 3])
    return {
        "model": name,
        "image_size": size,
        "text_input": TEXT_INPUTS.get(entry.family) if size is None else None,
        "trainable_parameters": sum(int(np.prod(v.shape)) for v in model.trainable_variables),
        "parameters": int(model.count_params()),
        "forward_flops": flops,
        "multiply_adds": flops // 2,
    }


def compute(_: list[str]) -> dict:
    logging.set_verbosity(logging.WARNING)  # Model Garden logs every block it builds
    names = FLAGS.models or registry.list_models()
    for name in names:
        registry.model_entry(name)  # unknown names fail before any model is built
    rows = []
    for name in names:
        output.progress(f"building {name}")
        rows.append(model_stats(name, FLAGS.image_size, FLAGS.num_classes))
    return {"num_classes": FLAGS.num_classes, "models": rows}


def render(result: dict) -> str:
    lines = [
        "| model | input | trainable params | params | GFLOPs (forward) | multiply-adds (M) |",
        "|---|---|---|---|---|---|",
    ]
    for row in result["models"]:
        lines.append(
            f"| {row['model']} | {row['image_size'] or row['text_input']} | "
            f"{row['trainable_parameters']:,} | "
            f"{row['parameters']:,} | {row['forward_flops'] / 1e9:.2f} | "
            f"{row['multiply_adds'] / 1e6:,.0f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    output.run_cli("model_stats", compute, render)
