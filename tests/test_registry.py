"""timm-style registry: one-line model creation and the --list command."""

import subprocess

import numpy as np
import pytest
from zoo_testing import PYTHON

import models


def _trainable(model) -> int:
    return sum(int(np.prod(v.shape)) for v in model.trainable_variables)


def test_resnet_variants_registered():
    assert {f"resnet{d}" for d in (18, 34, 50, 101, 152, 200)} <= set(models.list_models())


def test_resnet50_has_published_parameter_count():
    # 25,557,032 trainable parameters: torchvision's ResNet50_Weights.IMAGENET1K_V1 model card
    # ("num_params": 25557032) and timm's resnet50 (25.56M); ResNet v1.5 has the same count as
    # v1 (He et al. 2015, arXiv 1512.03385), only the stride moves to the 3x3 conv.
    model = models.create_model("resnet50", num_classes=1000)
    assert _trainable(model) == 25_557_032


def test_overrides_reach_the_builder():
    model = models.create_model("resnet18", num_classes=7, image_size=32, width_multiplier=0.25)
    assert model.output_shape == (None, 7)


def test_unknown_model_suggests_nearest():
    with pytest.raises(models.registry.UsageError, match="resnet50"):
        models.create_model("resnet05")


def test_list_command_shows_models_and_recipes(cli_env):
    out = subprocess.run(
        [PYTHON, "-m", "models", "--list"], capture_output=True, text=True, env=cli_env, check=True
    ).stdout
    line = next(x for x in out.splitlines() if x.startswith("resnet50 "))
    assert "default" in line and "resnet50_imagenet" in line
