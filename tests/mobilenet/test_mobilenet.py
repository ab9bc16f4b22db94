"""MobileNet v1/v2/v3: parameter counts against the papers, the default recipe end to end
through the CLI, its train step under XLA, and a simulated 2-replica slice."""

from __future__ import annotations

import gin
import numpy as np
import pytest

from models import registry
from models.core import gin_config, optimization
from models.mobilenet import model  # noqa: F401 - registers the gin configurables

# Parameters counted as the papers' tables: every trainable weight of the 1000-class, 224x224,
# width-1.0 classifier (conv kernels, BN gamma/beta, biases, dense head); BN moving statistics
# are not parameters. Sources:
#   v1: Howard et al. 2017, arXiv 1704.04861, table 8 ("1.0 MobileNet-224": 4.2 million).
#   v2: Sandler et al. 2018, arXiv 1801.04381, table 4 (MobileNetV2: 3.4M, rounded down);
#       the authors' release states it to three digits: tensorflow/models
#       research/slim/nets/mobilenet/README.md, "mobilenet_v2_1.0_224 | 300 | 3.47", a count
#       of weights without BatchNormalization parameters (TF-slim's BN has no gamma), so v2 is
#       also checked that way against 3.47M (test_v2_weights_match_tf_slim_release).
#   v3: Howard et al. 2019, arXiv 1905.02244, table 3 (V3-Large 1.0: 5.4M, V3-Small 1.0: 2.5M;
#       two digits only; the TF-slim release table says 5.4 and 2.9).
PAPER = {
    "mobilenet_v1": 4.2e6,
    "mobilenet_v2": 3.4e6,
    "mobilenet_v3_large": 5.4e6,
    "mobilenet_v3_small": 2.5e6,
}
TF_SLIM_V2_WITHOUT_BN = 3.47e6
# What Model Garden's blocks give (pinned, so a change of the backbone shows up here).
MEASURED = {
    "mobilenet_v1": 4_231_976,  # +0.76% of the paper
    "mobilenet_v2": 3_504_872,  # +3.08%: the paper's 3.4M is low; TF-slim's own v2 is 3.47M
    "mobilenet_v3_large": 5_483_032,  # +1.54%
    "mobilenet_v3_small": 2_542_856,  # +1.71%
}
WITHIN_1_PERCENT = {"mobilenet_v1"}


def _count(name: str, with_batch_norm: bool = True) -> int:
    built = registry.create_model(name, num_classes=1000, image_size=224)
    return sum(
        int(np.prod(v.shape))
        for v in built.trainable_variables
        if with_batch_norm or not any(k in v.name for k in ("gamma", "beta"))
    )


@pytest.fixture(scope="module")
def counts() -> dict[str, int]:
    return {name: _count(name) for name in PAPER}


def test_registered_variants():
    assert registry.list_models("mobilenet") == sorted(PAPER)
    assert "default" in registry.list_recipes("mobilenet")


@pytest.mark.parametrize("name", sorted(PAPER))
def test_parameter_count_matches_model_garden(name, counts):
    assert counts[name] == MEASURED[name]
    assert counts[name] == pytest.approx(PAPER[name], rel=0.035)


@pytest.mark.parametrize(
    "name",
    [
        n if n in WITHIN_1_PERCENT else pytest.param(n, marks=pytest.mark.xfail(strict=True))
        for n in sorted(PAPER)
    ],
)
def test_parameter_count_within_1_percent_of_paper(name, counts):
    # v2 and v3 are 1.5-3.1% above their papers' two-digit figures with Model Garden's blocks
    # (see MEASURED); the figures look truncated (v2: 3.47M printed as 3.4M).
    assert counts[name] == pytest.approx(PAPER[name], rel=0.01)


def test_v2_weights_match_tf_slim_release():
    without_batch_norm = _count("mobilenet_v2", with_batch_norm=False)
    assert without_batch_norm == 3_470_760
    assert without_batch_norm == pytest.approx(TF_SLIM_V2_WITHOUT_BN, rel=0.01)


def test_imagenet_recipes_follow_their_references():
    assert set(registry.list_recipes("mobilenet")) >= {
        f"mobilenet_{v}_imagenet" for v in ("v1", "v2", "v3_large", "v3_small")
    }
    gin.clear_config()
    try:
        gin_config.parse(["mobilenet/mobilenet_v1_imagenet.gin"], [])
        schedule = optimization.learning_rate(
            steps_per_epoch=1251, total_steps=300 * 1251, global_batch_size=1024
        )
        assert float(schedule(0)) == pytest.approx(0.66)  # 0.165 x 1024 / 256, no warmup
        assert float(schedule(10 * 1251)) == pytest.approx(0.66 * 0.94**3, rel=1e-5)
        assert optimization.ema_decay() == 0.995
        gin.clear_config()
        gin_config.parse(["mobilenet/mobilenet_v3_small_imagenet.gin"], [])
        assert gin.query_parameter("mobilenet.version") == "v3_small"
        assert optimization.ema_decay() == 0.9999
    finally:
        gin.clear_config()
