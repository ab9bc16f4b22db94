"""timm-style model registry: one-line creation of any registered variant, and its metadata.

Each variant records (timm's `default_cfg`) its family, task, native and minimum input size,
the builder arguments it fixes and its own defaults, the published parameter counts with their
sources, and, computed from configs/, the recipes that train it and its default recipe.

Published parameter counts follow one rule (`PublishedCount.admits`): the measured count, by
the figure's own counting convention, must round to the figure at the precision it was printed
with ("3.4M" admits [3.35M, 3.45M); "25,557,032" only itself). A figure the variant does not
meet says why in `disagrees`; the test over every variant expects that failure.
"""

from __future__ import annotations

import fnmatch
import functools
import importlib
import inspect
import pkgutil
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from models.core.errors import UsageError, nearest
from models.core.gin_types import check_argument_type
from models.core.paths import (
    CONFIGS_DIR,  # also models.core.registry.CONFIGS_DIR, for its importers
)
from models.core.recipe_text import expanded_lines

_NOT_MODELS = {"core", "data", "tasks"}
_SUFFIXES = {"K": 10**3, "M": 10**6, "B": 10**9}
# How a source counts parameters. BN moving statistics are never parameters except in Keras'
# count_params(); "weights" counts a BN gamma per channel even where the layer learns none
# (TF-slim's unit), as PyTorch ports of those networks do.
COUNTINGS = {
    "weights": "every learned weight, BN as gamma + beta per channel (papers, torchvision, timm)",
    "keras_total": "Keras count_params(): all weights, BN moving mean and variance included",
    "without_bn": "learned weights without BN parameters (TF-slim release tables; torchvision's "
    "detectors, whose BN is frozen)",
    "trainable": "the trainable variables, as TF1 code counts them (Compare GAN's tests): a BN "
    "whose scale comes from another layer (conditional BN) has none of its own",
}


@dataclass(frozen=True)
class PublishedCount:
    """A parameter count as `source` printed it (`figure`: "3.4M", "25,557,032"), counted by
    `counting` at 1000 classes with builder arguments `config` (beyond the variant's own), of
    the whole model or of its sub-model `part` (a GAN's "generator" or "discriminator")."""

    figure: str
    source: str
    counting: str = "weights"
    config: Mapping[str, Any] = field(default_factory=dict)
    disagrees: str = ""  # why the variant's count does not round to the figure, if it does not
    part: str = ""

    @property
    def value(self) -> int:
        number = self.figure.replace(",", "")
        scale = _SUFFIXES.get(number[-1], 1)
        return round(float(number.rstrip("".join(_SUFFIXES))) * scale)

    @property
    def digits(self) -> int:
        """Significant digits as printed ("12M": 2, "42.68M": 4, "25,557,032": 8)."""
        return len(re.sub(r"\D", "", self.figure).lstrip("0"))

    def admits(self, measured: int) -> bool:
        """The rule: `measured` rounds to the figure at its printed precision."""
        unit = 10 ** (len(str(self.value)) - self.digits)
        return -unit <= 2 * (measured - self.value) < unit


def count_parameters(model, counting: str = "weights") -> int:
    """`model`'s parameters by one of COUNTINGS."""
    import numpy as np
    import tf_keras

    def size(variables) -> int:
        return sum(int(np.prod(v.shape)) for v in variables)

    if counting == "keras_total":
        return size(model.weights)
    if counting == "trainable":
        return size(model.trainable_variables)
    batch_norm = tf_keras.layers.BatchNormalization
    norms = {id(x): x for x in model.submodules if isinstance(x, batch_norm)}
    if counting == "without_bn":
        in_norms = {id(w) for layer in norms.values() for w in layer.trainable_weights}
        return size(v for v in model.trainable_variables if id(v) not in in_norms)
    if counting != "weights":
        raise ValueError(f"unknown counting '{counting}': use one of {', '.join(COUNTINGS)}")
    missing_gammas = sum(x.moving_mean.shape[0] for x in norms.values() if not x.scale)
    return size(model.trainable_variables) + missing_gammas


@dataclass(frozen=True)
class ModelEntry:
    """A registered variant: `builder(**arguments)` with `fixed` arguments (its architecture)
    and `defaults` (its own, where neither the caller nor gin sets them)."""

    name: str
    family: str
    builder: Callable
    description: str
    task: str = "ImageClassificationTask"  # gin name of its Task class
    #: Other tasks its recipes may run it under (BERT: fine-tuning on a pretrained encoder).
    other_tasks: tuple[str, ...] = ()
    fixed: Mapping[str, Any] = field(default_factory=dict)
    defaults: Mapping[str, Any] = field(default_factory=dict)
    min_image_size: int = 1
    published: tuple[PublishedCount, ...] = ()
    #: A detector's anchor layout (models.data.anchors.ANCHOR_LAYOUTS), which its input labels:
    #: None for its task's own (`anchors`, or a two-stage task's `rpn_anchors`), "ssd_anchors"
    #: for SSD's fixed default boxes, "grid_anchors" for the Object Detection API's grid.
    anchors: str | None = None

    @property
    def image_size(self) -> int | None:
        """Native input size: the variant's fixed or default one, else its builder's; None for
        a model that takes no image (BERT)."""
        for arguments in (self.fixed, self.defaults):
            if "image_size" in arguments:
                return int(arguments["image_size"])
        parameter = inspect.signature(self.builder).parameters.get("image_size")
        return None if parameter is None else int(parameter.default)

    @property
    def recipes(self) -> list[str]:
        """Recipes (`<family>/<name>` under configs/) whose `run.model` names this variant."""
        return sorted(recipe for recipe, model in _recipe_models().items() if model == self.name)

    @property
    def default_recipe(self) -> str | None:
        """The family's default recipe if it trains this variant, else its first recipe."""
        own = f"{self.family}/default"
        return own if own in self.recipes else next(iter(self.recipes), None)

    def task_class(self) -> type:
        """The Task class, resolved through gin (tasks import their models: no cycle here)."""
        import gin

        load_all()
        return gin.get_configurable(self.task)

    def arguments(self, overrides: Mapping[str, Any]) -> dict[str, Any]:
        """Builder arguments: the fixed ones, the caller's, then this variant's defaults where
        neither the caller nor gin sets them. Changing a fixed one is a UsageError."""
        bound = _gin_bindings(self.builder)
        settings = [(f"{k}={v!r}", k, v) for k, v in overrides.items()]
        settings += [(f"{self.builder.__name__}.{k} = {v!r}", k, v) for k, v in bound.items()]
        for setting, name, value in settings:
            if name in self.fixed and value != self.fixed[name]:
                raise UsageError(f"{setting}: {self._fixed_advice(name, value)}")
            check_argument_type(self.builder, name, value, setting)
        own = {k: v for k, v in self.defaults.items() if k not in overrides and k not in bound}
        return {**own, **overrides, **self.fixed}

    def _fixed_advice(self, name: str, value: Any) -> str:
        """What to use instead of changing fixed argument `name` to `value`."""
        peers = sorted(e.name for e in _REGISTRY.values() if e.builder is self.builder)
        wanted = {**self.fixed, name: value}
        match = [peer for peer in peers if dict(_REGISTRY[peer].fixed) == wanted]
        advice = (
            f'use the variant {match[0]} (run.model = "{match[0]}")'
            if match
            else f"no variant has {_settings(wanted)} ({', '.join(peers)})"
        )
        return f"{self.name} fixes {name} = {self.fixed[name]!r}; {advice}"


def _settings(arguments: Mapping[str, Any]) -> str:
    """Builder arguments as one reads them in a message: "a = 1, b = 'x'"."""
    return ", ".join(f"{name} = {value!r}" for name, value in arguments.items())


_REGISTRY: dict[str, ModelEntry] = {}


def register_model(
    name: str,
    family: str,
    description: str = "",
    *,
    task: str = "ImageClassificationTask",
    other_tasks: tuple[str, ...] = (),
    fixed: Mapping[str, Any] | None = None,
    defaults: Mapping[str, Any] | None = None,
    min_image_size: int = 1,
    published: tuple[PublishedCount, ...] = (),
    anchors: str | None = None,
) -> Callable:
    """Decorator registering `builder(**arguments) -> tf_keras.Model` as variant `name`."""

    def wrap(builder: Callable) -> Callable:
        _REGISTRY[name] = ModelEntry(
            name=name,
            family=family,
            builder=builder,
            description=description,
            task=task,
            other_tasks=tuple(other_tasks),
            fixed=dict(fixed or {}),
            defaults=dict(defaults or {}),
            min_image_size=min_image_size,
            published=tuple(published),
            anchors=anchors,
        )
        return builder

    return wrap


def _gin_bindings(builder: Callable) -> dict[str, Any]:
    """What gin binds for `builder`'s arguments in the current scope ({} if not gin's)."""
    import gin

    try:
        return gin.get_bindings(builder, resolve_references=False)
    except ValueError:
        return {}


def load_all() -> None:
    """Imports the shared tasks and every model family's model.py (and task.py, where the
    family has its own task), so that every variant, task and gin configurable registers."""
    import models

    # Found by name, as families are: core imports no task and no model (import-linter).
    tasks = importlib.import_module("models.tasks")
    for info in pkgutil.iter_modules(tasks.__path__):
        importlib.import_module(f"models.tasks.{info.name}")
    for info in pkgutil.iter_modules(models.__path__):
        if info.ispkg and info.name not in _NOT_MODELS:
            importlib.import_module(f"models.{info.name}.model")
            if (Path(models.__path__[0]) / info.name / "task.py").exists():
                importlib.import_module(f"models.{info.name}.task")


def list_models(family: str | None = None, pattern: str = "*") -> list[str]:
    """Names of the registered variants, of one family and matching an fnmatch `pattern`
    ("resnet*") if given, sorted."""
    load_all()
    return sorted(
        n
        for n, e in _REGISTRY.items()
        if family in (None, e.family) and fnmatch.fnmatchcase(n, pattern)
    )


def model_entry(name: str) -> ModelEntry:
    """The metadata of variant `name`; UsageError naming the nearest if there is none."""
    load_all()
    if name not in _REGISTRY:
        raise UsageError(f"unknown model '{name}'{nearest(name, _REGISTRY)}")
    return _REGISTRY[name]


def create_model(name: str, **overrides):
    """Builds the Keras model of variant `name`, e.g. create_model("resnet50", num_classes=1000);
    `overrides` are builder arguments (the variant's fixed ones cannot change)."""
    entry = model_entry(name)
    return entry.builder(**entry.arguments(overrides))


def list_recipes(family: str) -> list[str]:
    """Recipe names (gin files) under configs/<family>/."""
    return sorted(p.stem for p in (CONFIGS_DIR / family).glob("*.gin"))


_RUN_MODEL = re.compile(r"""^\s*run\.model\s*=\s*['"]([^'"]+)['"]""")


@functools.cache
def _recipe_models() -> dict[str, str | None]:
    """`<family>/<name>` of every recipe under configs/ -> the variant its run.model names: the
    last one, with includes followed in place (read as text: gin's state is not touched)."""
    named = {}
    for path in sorted(CONFIGS_DIR.glob("*/*.gin")):
        variants = [m.group(1) for line in expanded_lines(path) if (m := _RUN_MODEL.match(line))]
        named[f"{path.parent.name}/{path.stem}"] = variants[-1] if variants else None
    return named
