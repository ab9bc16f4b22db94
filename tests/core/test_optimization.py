"""Learning-rate rules of the slice recipes: linear scaling, warmup, decay, LARS."""

import gin
import pytest
import tf_keras
from official.modeling.optimization import lars

from models.core import gin_config, optimization


@pytest.fixture(autouse=True)
def _clean_gin():
    gin.clear_config()
    yield
    gin.clear_config()


def _lr(schedule, step):
    return float(schedule(step)) if callable(schedule) else float(schedule)


def test_linear_scaling_and_warmup():
    gin.parse_config(["learning_rate.base_lr = 0.1", "learning_rate.base_batch_size = 256"])
    schedule = optimization.learning_rate(
        steps_per_epoch=100, total_steps=1000, global_batch_size=1024
    )
    assert _lr(schedule, 0) == pytest.approx(0.0)
    assert _lr(schedule, 250) == pytest.approx(0.2, rel=1e-5)  # half of 5-epoch warmup
    assert _lr(schedule, 500) == pytest.approx(0.4, rel=1e-5)  # peak = 0.1 x 1024 / 256
    assert _lr(schedule, 999) < 0.01  # cosine to ~0


def test_lars_slice_recipe_builds_lars_with_unscaled_peak():
    gin_config.parse(["slices/v3-128.gin"], [])
    schedule = optimization.learning_rate(
        steps_per_epoch=10, total_steps=100, global_batch_size=16384
    )
    assert _lr(schedule, 50) == pytest.approx(25.0, rel=1e-5)
    assert _lr(schedule, 100) == pytest.approx(1e-4, rel=1e-3)
    assert isinstance(optimization.build_optimizer(schedule), lars.LARS)


def test_l2_penalty_skips_batch_norm_and_decoupled_optimisers():
    gin.parse_config(["weight_decay.rate = 0.5"])
    layer = tf_keras.Sequential([tf_keras.layers.Dense(2), tf_keras.layers.BatchNormalization()])
    layer.build((None, 3))
    layer.set_weights([w * 0 + 1 for w in layer.get_weights()])
    sgd = tf_keras.optimizers.SGD(0.1)
    # Only the 3x2 kernel decays: 0.5 * (6 * 1^2) / 2 = 1.5; bias and BN do not.
    assert float(optimization.l2_penalty(sgd, layer.trainable_variables)) == pytest.approx(1.5)
    assert float(optimization.l2_penalty(lars.LARS(0.1), layer.trainable_variables)) == 0.0
