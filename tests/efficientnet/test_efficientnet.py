"""EfficientNet B0-B7: each variant fixes its scaling and defaults to its own resolution and head
dropout, which the caller or gin override. (Parameter counts: tests/test_models.py; default
recipe end to end, XLA, simulated slice: tests/test_family_defaults.py.)"""

from __future__ import annotations

import pytest

from models.core import registry
from models.efficientnet.model import VARIANTS


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_variant_fixes_its_scaling_and_defaults_its_resolution_and_dropout(variant):
    size, dropout = VARIANTS[variant]
    entry = registry.model_entry(f"efficientnet_{variant}")
    assert entry.arguments({}) == {"variant": variant, "image_size": size, "dropout_rate": dropout}
    assert entry.image_size == size


def test_only_b0_has_recipes():
    assert registry.list_recipes("efficientnet") == ["default", "efficientnet_b0_imagenet"]
    assert registry.model_entry("efficientnet_b0").recipes == [
        "efficientnet/default",
        "efficientnet/efficientnet_b0_imagenet",
    ]
