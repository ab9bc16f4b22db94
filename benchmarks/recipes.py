"""--recipe=<family>/<name> and --model=<variant> of the benchmark commands, checked and resolved.

A recipe is named as --gin_file names it (`resnet/default`, `resnet/resnet50_imagenet`); the
model it trains is its `run.model` (a registered variant), or --model where given.
"""

from __future__ import annotations

from dataclasses import dataclass

import gin
from absl import flags

from models.core import gin_config, registry
from models.core.errors import UsageError, nearest
from models.core.recipe import RunSpec


@dataclass(frozen=True)
class Recipe:
    """A parsed recipe: its family, its name under configs/<family>/ and the variant it trains."""

    family: str
    name: str
    model: str

    @property
    def path(self) -> str:
        """`<family>/<name>`, as --recipe and --gin_file name it."""
        return f"{self.family}/{self.name}"


def define_flags(default_recipe: str) -> None:
    """--recipe and --model, the same in every command that trains a recipe."""
    flags.DEFINE_string("recipe", default_recipe, "Recipe <family>/<name>, as --gin_file names it.")
    flags.DEFINE_string("model", None, "Registered variant to train (default: the recipe's).")


def families() -> list[str]:
    """Model families that have a registered variant."""
    return sorted({registry.model_entry(name).family for name in registry.list_models()})


def split_recipe(text: str) -> tuple[str, str]:
    """'resnet/default' (or 'resnet/default.gin') -> ('resnet', 'default'); UsageError if the
    family or recipe is unknown."""
    family, _, name = text.removesuffix(".gin").partition("/")
    if not family or not name or "/" in name:
        raise UsageError(f"--recipe={text}: expected <family>/<name>, e.g. resnet/default")
    known = families()
    if family not in known:
        raise UsageError(f"--recipe={text}: unknown family '{family}'{nearest(family, known)}")
    recipes = registry.list_recipes(family)
    if name not in recipes:
        have = ", ".join(f"{family}/{r}" for r in recipes)
        raise UsageError(f"unknown recipe '{text}'{nearest(name, recipes)} (have: {have})")
    return family, name


def check_model(model: str, family: str, owner: str = "--model") -> None:
    """UsageError unless `model` is a registered variant of `family`; `owner` names the setting
    in the message (--model, or the recipe's run.model)."""
    if model in families():
        raise UsageError(
            f"{owner}={model} is a family: --model names a variant (e.g. "
            f"{registry.list_models(model)[0]}) and --recipe={model}/<name> the recipe"
        )
    entry = registry.model_entry(model)
    if entry.family != family:
        raise UsageError(f"{owner}={model} is a {entry.family} variant, not a {family} one")


def model_bindings(model: str | None) -> list[str]:
    """The gin binding that makes the recipe train `model` (none when it is None)."""
    return [] if model is None else [f'run.model = "{model}"']


def load_recipe(text: str, model: str | None = None, bindings: tuple[str, ...] = ()) -> Recipe:
    """Parses configs/<family>/<name>.gin with `bindings` (then --model, which wins) into a
    fresh gin config; the recipe with the variant it trains."""
    family, name = split_recipe(text)
    if model is not None:
        check_model(model, family)
    gin.clear_config()
    gin_config.parse([f"{family}/{name}.gin"], [*bindings, *model_bindings(model)], family)
    trained = RunSpec().check().model
    if model is None:
        check_model(trained, family, owner=f"{family}/{name}: run.model")
    return Recipe(family, name, trained)
