"""What every family's default recipe must do besides memorising one batch on a simulated
2-replica slice (tests/test_memorisation.py): compile its train step with XLA. That it reaches
its target on its built-in data is `make acceptance`'s check (README, "Tests"). ResNet has
fuller versions of these in tests/resnet and tests/core/test_trainer.py."""

from __future__ import annotations

import pytest
from family_checks import check_xla_train_step

from models.core import registry

FAMILIES = sorted({registry.model_entry(n).family for n in registry.list_models()} - {"resnet"})
# TensorFlow's combined NMS, which Mask R-CNN's default recipe proposes with on CPU, has no XLA
# kernel: its XLA check compiles the padded NMS of the TPU recipes instead.
XLA_PARAMS = {"mask_rcnn": ("mask_rcnn.proposal_nms = 'padded'",)}


def test_every_family_is_checked():
    families = {"amoebanet", "bert", "efficientnet", "inception", "mnasnet", "mobilenet"}
    families |= {"retinanet", "mask_rcnn", "object_detection", "transformer"}
    families |= {"dcgan", "compare_gan", "deeplab"}
    assert families <= set(FAMILIES)


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_default_recipe_train_step_compiles_with_xla(family, digits_dir):
    check_xla_train_step(f"{family}/default.gin", XLA_PARAMS.get(family, ()))


def test_every_family_readme_names_the_length_flags():
    """Shortening a run is one flag whatever the recipe spells its length in: each family's
    README says so, with its own command."""
    from zoo_testing import REPO

    for family in sorted({registry.model_entry(m).family for m in registry.list_models()}):
        text = (REPO / "models" / family / "README.md").read_text()
        assert f"python -m models.{family} --model_dir=DIR --steps=100" in text, family
