"""Learning-rate rules of the slice recipes: linear scaling, warmup, decay, LARS."""

import gin
import pytest
import tf_keras
from official.modeling.optimization import lars
from zoo_testing import plan

from models.core import gin_config, optimization
from models.core.errors import UsageError


def _lr(schedule, step):
    return float(schedule(step)) if callable(schedule) else float(schedule)


def test_linear_scaling_and_warmup():
    gin.parse_config(
        [
            "learning_rate.base_lr = 0.1",
            "learning_rate.base_batch_size = 256",
            "learning_rate.warmup_epochs = 5",
        ]
    )
    schedule = optimization.learning_rate(plan(100, 1000, 1024))
    assert _lr(schedule, 0) == pytest.approx(0.0)
    assert _lr(schedule, 250) == pytest.approx(0.2, rel=1e-5)  # half of 5-epoch warmup
    assert _lr(schedule, 500) == pytest.approx(0.4, rel=1e-5)  # peak = 0.1 x 1024 / 256
    assert _lr(schedule, 999) < 0.01  # cosine to ~0


def test_lars_recipe_builds_lars_with_unscaled_peak():
    gin_config.parse(["resnet/resnet50_imagenet_lars.gin", "slices/v3-128.gin"], [])
    schedule = optimization.learning_rate(plan(10, 100, 16384))
    assert _lr(schedule, 50) == pytest.approx(25.0, rel=1e-5)
    assert _lr(schedule, 100) == pytest.approx(1e-4, rel=1e-3)
    assert isinstance(optimization.build_optimizer(plan(10, 100, 16384)), lars.LARS)


def test_l2_penalty_skips_batch_norm_and_decoupled_optimisers():
    layer = tf_keras.Sequential([tf_keras.layers.Dense(2), tf_keras.layers.BatchNormalization()])
    layer.build((None, 3))
    layer.set_weights([w * 0 + 1 for w in layer.get_weights()])
    sgd = optimization.OptimizerSettings(name="sgd").build(0.1, weight_decay=0.5)
    lars_optimizer = optimization.OptimizerSettings(name="lars").build(0.1, weight_decay=0.5)
    # Only the 3x2 kernel decays: 0.5 * (6 * 1^2) / 2 = 1.5; bias and BN do not.
    assert float(optimization.l2_penalty(sgd, layer.trainable_variables)) == pytest.approx(1.5)
    assert float(optimization.l2_penalty(lars_optimizer, layer.trainable_variables)) == 0.0


def test_each_model_reads_its_own_gin_scope():
    gin.parse_config(
        [
            'optimizer.name = "adam"',
            "weight_decay.rate = 0.5",
            "learning_rate.base_batch_size = None",
            'learning_rate.decay = "constant"',
            "generator/learning_rate.base_lr = 2e-4",
            "discriminator/learning_rate.base_lr = 1e-3",
            'discriminator/optimizer.name = "sgd"',
            "discriminator/weight_decay.rate = 0.0",
        ]
    )
    built = optimization.build_optimizers(["generator", "discriminator"], plan(None, 100, 64))
    generator, discriminator = built["generator"], built["discriminator"]
    assert isinstance(generator, tf_keras.optimizers.Adam)
    assert isinstance(discriminator, tf_keras.optimizers.SGD)
    assert float(generator.learning_rate) == pytest.approx(2e-4)
    assert float(discriminator.learning_rate) == pytest.approx(1e-3)
    assert (generator.l2_rate, discriminator.l2_rate) == (0.5, 0.0)


def test_warmup_and_decay_in_steps_need_no_dataset_size():
    gin.parse_config(
        [
            "learning_rate.base_lr = 1.0",
            "learning_rate.base_batch_size = None",
            "learning_rate.warmup_steps = 10",
            'learning_rate.decay = "step"',
            "learning_rate.boundaries_steps = (50, 80)",
        ]
    )
    schedule = optimization.learning_rate(plan(None, 100, 32))
    # Keras's PiecewiseConstantDecay switches after a boundary step.
    assert [_lr(schedule, s) for s in (5, 10, 50, 51, 81)] == pytest.approx(
        [0.5, 1.0, 1.0, 0.1, 0.01]
    )


def test_epochs_without_a_dataset_size_is_one_line():
    gin.parse_config(["learning_rate.warmup_epochs = 1"])
    with pytest.raises(UsageError, match="warmup_epochs needs the dataset's size"):
        optimization.learning_rate(plan(None, 100, 32))


def test_exponential_decay_counts_from_step_zero_after_linear_warmup():
    gin.parse_config(
        [
            "learning_rate.base_lr = 0.016",
            "learning_rate.warmup_epochs = 5",
            'learning_rate.decay = "exponential"',
            "learning_rate.decay_epochs = 2.4",
            "learning_rate.decay_factor = 0.97",
        ]
    )
    schedule = optimization.learning_rate(plan(10, 3500, 512))
    peak = 0.016 * 512 / 256
    # The warmup ramps to the decayed value at its end (two 2.4-epoch drops by epoch 5).
    assert _lr(schedule, 25) == pytest.approx(0.5 * peak * 0.97**2, rel=1e-5)
    for epoch in (5, 24, 349):
        assert _lr(schedule, epoch * 10) == pytest.approx(peak * 0.97 ** int(epoch / 2.4), rel=1e-5)


@pytest.mark.parametrize("decay", [1.0, -0.1])
def test_ema_decay_out_of_range_is_a_usage_error(decay):
    gin.parse_config([f"optimizer.ema_decay = {decay}"])
    with pytest.raises(UsageError, match="optimizer.ema_decay"):
        optimization.build_optimizer(plan(10, 100, 256))


@pytest.mark.parametrize("name", ["adamw", "lamb"])
def test_decoupled_weight_decay_skips_layer_norm_and_biases(name):
    """BERT's recipes: AdamW and LAMB decay kernels only (a zero gradient isolates the decay)."""
    model = tf_keras.Sequential([tf_keras.layers.Dense(2), tf_keras.layers.LayerNormalization()])
    model.build((None, 3))
    model.set_weights([w * 0 + 1 for w in model.get_weights()])
    optimizer = optimization.OptimizerSettings(name=name).build(0.1, weight_decay=0.5)
    assert getattr(optimizer, optimization.L2_RATE) == 0.0  # no L2 term on top
    variables = model.trainable_variables
    optimizer.apply_gradients([(v * 0, v) for v in variables])
    changed = {v.name.split("/")[-1]: bool((v.numpy() != 1).any()) for v in variables}
    assert changed == {"kernel:0": True, "bias:0": False, "gamma:0": False, "beta:0": False}


def test_square_root_scaling_and_an_unknown_rule():
    gin.parse_config(
        [
            "learning_rate.base_lr = 2e-3",
            "learning_rate.base_batch_size = 64",
            'learning_rate.scaling = "sqrt"',
            'learning_rate.decay = "constant"',
        ]
    )
    assert _lr(optimization.learning_rate(plan(10, 100, 256)), 5) == pytest.approx(4e-3)
    gin.parse_config(['learning_rate.scaling = "cubic"'])
    with pytest.raises(UsageError, match="learning_rate.scaling='cubic': use linear or sqrt"):
        optimization.learning_rate(plan(10, 100, 256))


def test_inverse_square_root_decay_is_the_transformers_rate():
    """lr = d^-0.5 x min(step^-0.5, step x warmup^-1.5) (Vaswani et al. 2017, 5.3): the
    recipe's base_lr is its peak, d^-0.5 x warmup^-0.5."""
    d, warmup = 512, 4000
    gin.parse_config(
        [
            f"learning_rate.base_lr = {d**-0.5 * warmup**-0.5}",
            "learning_rate.base_batch_size = None",
            f"learning_rate.warmup_steps = {warmup}",
            'learning_rate.decay = "rsqrt"',
        ]
    )
    schedule = optimization.learning_rate(plan(None, 100000, 64))
    for step in (100, 2000, 4000, 9000, 100000):
        paper = d**-0.5 * min(step**-0.5, step * warmup**-1.5)
        assert _lr(schedule, step) == pytest.approx(paper, rel=1e-5)
    gin.parse_config(["learning_rate.warmup_steps = None"])
    with pytest.raises(UsageError, match="'rsqrt' needs a warmup"):
        optimization.learning_rate(plan(None, 100000, 64))
