"""MobileNet v1/v2/v3: registered variants and the ImageNet recipes' references. (Parameter
counts: tests/test_models.py; default recipe end to end, XLA, simulated slice:
tests/test_family_defaults.py.)"""

from __future__ import annotations

import gin
import pytest
from zoo_testing import plan

from models.core import gin_config, optimization, registry
from models.core.recipe import RunSpec

VERSIONS = ("v1", "v2", "v3_large", "v3_small")


def test_registered_variants():
    assert registry.list_models("mobilenet") == [f"mobilenet_{v}" for v in VERSIONS]
    assert "default" in registry.list_recipes("mobilenet")
    assert registry.model_entry("mobilenet_v2").default_recipe == "mobilenet/default"


def test_imagenet_recipes_follow_their_references():
    assert set(registry.list_recipes("mobilenet")) >= {f"mobilenet_{v}_imagenet" for v in VERSIONS}
    gin.clear_config()
    try:
        gin_config.parse(["mobilenet/mobilenet_v1_imagenet.gin"], [])
        step_plan = plan(1251, 300 * 1251, 1024)
        schedule = optimization.learning_rate(step_plan)
        assert float(schedule(0)) == pytest.approx(0.66)  # 0.165 x 1024 / 256, no warmup
        assert float(schedule(10 * 1251)) == pytest.approx(0.66 * 0.94**3, rel=1e-5)
        assert optimization.ema_decay() == 0.995
        gin.clear_config()
        gin_config.parse(["mobilenet/mobilenet_v3_small_imagenet.gin"], [])
        assert RunSpec().model == "mobilenet_v3_small"
        assert optimization.ema_decay() == 0.9999
    finally:
        gin.clear_config()
