"""timm-style model registry: one-line creation of any registered variant."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from models.core.errors import UsageError, nearest
from models.paths import CONFIGS_DIR  # also models.registry.CONFIGS_DIR, for its importers

_NOT_MODELS = {"core", "data"}


@dataclass(frozen=True)
class ModelEntry:
    """A registered model variant: its name, family (package) and builder."""

    name: str
    family: str
    builder: Callable
    description: str


_REGISTRY: dict[str, ModelEntry] = {}


def register_model(name: str, family: str, description: str = "") -> Callable:
    """Decorator registering `builder(**overrides) -> tf_keras.Model` under `name`."""

    def wrap(builder: Callable) -> Callable:
        _REGISTRY[name] = ModelEntry(name, family, builder, description)
        return builder

    return wrap


def load_all() -> None:
    """Imports the shared tasks and every model family's model.py (and task.py, where the
    family has its own task), so that every variant, task and gin configurable registers."""
    import models
    from models.core import tasks

    for info in pkgutil.iter_modules(tasks.__path__):
        importlib.import_module(f"models.core.tasks.{info.name}")
    for info in pkgutil.iter_modules(models.__path__):
        if info.ispkg and info.name not in _NOT_MODELS:
            importlib.import_module(f"models.{info.name}.model")
            if (Path(models.__path__[0]) / info.name / "task.py").exists():
                importlib.import_module(f"models.{info.name}.task")


def list_models(family: str | None = None) -> list[str]:
    """Names of all registered variants, optionally of one family, sorted."""
    load_all()
    return sorted(n for n, e in _REGISTRY.items() if family in (None, e.family))


def model_entry(name: str) -> ModelEntry:
    load_all()
    if name not in _REGISTRY:
        raise UsageError(f"unknown model '{name}'{nearest(name, _REGISTRY)}")
    return _REGISTRY[name]


def create_model(name: str, **overrides):
    """Builds the Keras model of variant `name`, e.g. create_model("resnet50", num_classes=1000)."""
    return model_entry(name).builder(**overrides)


def list_recipes(family: str) -> list[str]:
    """Recipe names (gin files) under configs/<family>/."""
    return sorted(p.stem for p in (CONFIGS_DIR / family).glob("*.gin"))
