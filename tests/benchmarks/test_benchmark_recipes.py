"""--recipe=<family>/<name> and --model=<variant>: one meaning in every benchmark command."""

from __future__ import annotations

import gin
import pytest

from benchmarks.recipes import Recipe, load_recipe, split_recipe
from models.core.errors import UsageError


def test_the_model_is_the_recipes_run_model_or_the_flag():
    assert load_recipe("resnet/default") == Recipe("resnet", "default", "resnet18")
    assert load_recipe("resnet/default.gin", "resnet34").model == "resnet34"
    assert load_recipe("mobilenet/default").path == "mobilenet/default"
    assert gin.query_parameter("run.model") == "mobilenet_v2"


def test_a_binding_of_run_model_names_the_variant():
    recipe = load_recipe("resnet/default", bindings=('run.model = "resnet10"',))
    assert recipe.model == "resnet10"


@pytest.mark.parametrize(
    "text, message",
    [
        ("default", "expected <family>/<name>"),
        ("resnot/default", "did you mean 'resnet'"),
        ("slices/cpu-1", "unknown family 'slices'"),
        (
            "resnet/nope",
            "have: resnet/default, resnet/resnet50_imagenet, resnet/resnet50_imagenet_lars",
        ),
        ("resnet/defualt", "did you mean 'default'"),
    ],
)
def test_bad_recipe_names(text, message):
    with pytest.raises(UsageError, match=message):
        split_recipe(text)


@pytest.mark.parametrize(
    "model, message",
    [
        ("resnet", "--model=resnet is a family: --model names a variant"),
        ("resnet51", "unknown model 'resnet51'"),
        ("mobilenet_v2", "--model=mobilenet_v2 is a mobilenet variant, not a resnet one"),
    ],
)
def test_bad_models(model, message):
    with pytest.raises(UsageError, match=message):
        load_recipe("resnet/default", model)
