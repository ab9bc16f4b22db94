"""MnasNet-A1/B1: multiply-adds against the paper, the block lists, the ImageNet recipes'
schedule and usage errors. (Parameter counts: tests/test_models.py; default recipe end to end,
XLA, simulated slice: tests/test_family_defaults.py.)"""

from __future__ import annotations

import gin
import pytest
from official.vision.modeling.layers import nn_blocks
from zoo_testing import plan

from models.core import gin_config, optimization, registry
from models.core.errors import UsageError
from models.core.recipe import RunSpec
from models.core.settings import TrainSettings
from models.mnasnet import model as mnasnet_model
from models.tasks.image_classification import ImageClassificationTask

# Tan et al. 2019, "MnasNet: Platform-Aware Neural Architecture Search for Mobile", arXiv
# 1807.11626: MnasNet-A1 312M multiply-adds (table 1), MnasNet-B1 315M (the paper's B1 row).
# Multiply-adds count convolutions and the dense layer of one 224x224 image, 1000 classes.
PAPER_MADDS = {"a1": 312e6, "b1": 315e6}
MEASURED_MADDS = {"a1": 311_579_072, "b1": 314_415_872}  # what this build gives (pinned)


@pytest.fixture(scope="module")
def built() -> dict:
    return {v: registry.create_model(f"mnasnet_{v}", num_classes=1000) for v in PAPER_MADDS}


def test_registered_variants_and_recipes():
    assert registry.list_models("mnasnet") == ["mnasnet_a1", "mnasnet_b1"]
    assert registry.list_recipes("mnasnet") == [
        "default",
        "mnasnet_a1_imagenet",
        "mnasnet_b1_imagenet",
    ]


@pytest.mark.parametrize("variant", sorted(PAPER_MADDS))
def test_multiply_adds_match_the_paper(variant, built):
    net = built[variant]
    assert net.input_shape == (None, 224, 224, 3) and net.output_shape == (None, 1000)
    madds = mnasnet_model.multiply_adds(net)
    assert madds == MEASURED_MADDS[variant]
    assert madds == pytest.approx(PAPER_MADDS[variant], rel=0.01)  # A1 -0.14%, B1 -0.19%


@pytest.mark.parametrize("variant", sorted(PAPER_MADDS))
def test_block_lists_follow_the_reference(variant, built):
    """Blocks per stage, SE placement and the head, as in mnasnet_models.py."""
    blocks = [
        layer
        for layer in built[variant].backbone.layers
        if isinstance(layer, nn_blocks.InvertedBottleneckBlock)
    ]
    stages = mnasnet_model.STAGES[variant]
    assert len(blocks) == sum(s.repeats for s in stages) == {"a1": 16, "b1": 17}[variant]
    expected = [
        (s.filters, s.kernel, s.expand, s.se_ratio) for s in stages for _ in range(s.repeats)
    ]
    got = [
        (b._out_filters, b._kernel_size, b._expand_ratio, b._se_ratio)  # noqa: SLF001
        for b in blocks
    ]
    assert got == expected
    with_se = {b._out_filters for b in blocks if b._se_ratio}  # noqa: SLF001
    assert with_se == ({40, 112, 160} if variant == "a1" else set())
    specs = built[variant].backbone.output_specs
    assert [tuple(specs[k]) for k in sorted(specs)] == [
        (None, 56, 56, 24),
        (None, 28, 28, 40),
        (None, 14, 14, 112 if variant == "a1" else 96),
        (None, 7, 7, 320),
        (None, 7, 7, 1280),
    ]


def test_output_stride_dilates_instead_of_striding():
    net = registry.create_model("mnasnet_a1", num_classes=10, image_size=32, output_stride=8)
    assert tuple(net.backbone.output_specs["6"]) == (None, 4, 4, 1280)
    plain = registry.create_model("mnasnet_a1", num_classes=10, image_size=32)
    assert tuple(plain.backbone.output_specs["6"]) == (None, 1, 1, 1280)
    assert registry.count_parameters(net) == registry.count_parameters(plain)


def test_bad_arguments_are_usage_errors():
    with pytest.raises(UsageError, match="mnasnet_a1 fixes variant = 'a1'; no variant has"):
        registry.create_model("mnasnet_a1", variant="a2")
    with pytest.raises(UsageError, match="depth_multiplier"):
        registry.create_model("mnasnet_a1", depth_multiplier=0.0)
    with pytest.raises(UsageError, match="output_stride"):
        registry.create_model("mnasnet_a1", output_stride=12)
    gin_config.parse(["mnasnet/default.gin"], ['mnasnet.variant = "b1"'])
    with pytest.raises(
        UsageError, match='use the variant mnasnet_b1 \\(run.model = "mnasnet_b1"\\)'
    ):
        ImageClassificationTask(model="mnasnet_a1").build_models()


@pytest.mark.parametrize(("variant", "target"), [("a1", 0.752), ("b1", 0.745)])
def test_imagenet_recipe_is_the_tpu_reference_schedule(variant, target):
    gin_config.parse([f"mnasnet/mnasnet_{variant}_imagenet.gin"], [])
    settings = TrainSettings()
    assert (settings.global_batch_size, settings.epochs) == (1024, 350)
    assert settings.target_value == target
    steps_per_epoch = 1251  # 1281167 / 1024
    step_plan = plan(steps_per_epoch, 350 * steps_per_epoch, 1024)
    schedule = optimization.learning_rate(step_plan)
    peak = 0.016 * 1024 / 256
    for epoch in (10, 100, 349):  # after the 5 warmup epochs: x0.97 per 2.4 whole epochs
        lr = float(schedule(epoch * steps_per_epoch + 1))
        assert lr == pytest.approx(peak * 0.97 ** (epoch // 2.4), rel=1e-5)
    assert float(schedule(0)) == 0.0
    config = optimization.build_optimizer(step_plan).get_config()
    assert config["name"] == "RMSprop"
    assert (config["rho"], config["momentum"], config["epsilon"]) == (0.9, 0.9, 1e-3)
    assert optimization.ema_decay() == 0.9999
    assert optimization.weight_decay_rate() == 1e-5
    task = ImageClassificationTask(model=RunSpec().model)
    assert task.label_smoothing == 0.1 and task.input.image_size == 224
    assert task.input.eval_crop_fraction == 0.875
    assert RunSpec().model == f"mnasnet_{variant}"
    assert gin.query_parameter("mnasnet.dropout_rate") == 0.2
    assert gin.query_parameter("mnasnet.drop_connect_rate") == 0.0
    assert gin.query_parameter("mnasnet.norm_momentum") == 0.99
    assert gin.query_parameter("mnasnet.norm_epsilon") == 1e-3
