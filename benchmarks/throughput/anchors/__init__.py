"""Model Garden's own experiments, each matched to one family's recipe and fed our synthetic
input: the anchor our trainer's throughput is compared with. `find` picks the one that can
train what a recipe trains."""

from __future__ import annotations

import importlib
from types import ModuleType

from benchmarks.recipes import Recipe
from models.core.task import Task

# Each a module here: EXPERIMENT, supports() and measure_anchor().
FAMILIES = ("resnet", "retinanet", "bert", "transformer")
EXPERIMENTS = {
    "resnet": "resnet_imagenet",
    "retinanet": "retinanet_resnetfpn_coco",
    "bert": "bert/pretraining",
    "transformer": "wmt_transformer/large",
}
NO_ANCHOR = (
    "no anchor: Model Garden's "
    + ", ".join(f"'{EXPERIMENTS[f]}' ({f})" for f in FAMILIES)
    + " match those families only, so only this project's trainer is measured"
)


def find(recipe: Recipe, task: Task) -> ModuleType | None:
    """The anchor module for the recipe's family (imports Model Garden's registries), or None."""
    if recipe.family not in FAMILIES:
        return None
    anchor = importlib.import_module(f"benchmarks.throughput.anchors.{recipe.family}")
    return anchor if anchor.supports(recipe, task) else None
