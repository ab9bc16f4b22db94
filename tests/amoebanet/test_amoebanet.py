"""AmoebaNet-D: the TPU reference recipe, usage errors, drop path and the auxiliary head in
training. (Parameter counts: tests/test_models.py; default recipe end to end, XLA, simulated
slice: tests/test_family_defaults.py.)"""

from __future__ import annotations

import gin
import numpy as np
import pytest
import tensorflow as tf
from zoo_testing import plan

from models.amoebanet.model import AmoebaNet, ScheduledDropPath
from models.amoebanet.task import AmoebaNetTask
from models.core import gin_config, optimization, registry
from models.core.errors import UsageError
from models.core.recipe import RunSpec
from models.core.strategy import build_strategy
from models.core.trainer import Trainer, build_training_state


def test_registered_variants_and_recipes():
    assert registry.list_models("amoebanet") == ["amoebanet_d", "amoebanet_d_small"]
    assert registry.list_recipes("amoebanet") == ["amoebanet_d_imagenet", "default"]


def test_imagenet_recipe_is_the_tpu_reference_schedule():
    gin_config.parse(["amoebanet/amoebanet_d_imagenet.gin"], [])
    steps_per_epoch = 1281167 // 256
    step_plan = plan(steps_per_epoch, 48 * steps_per_epoch, 256)
    schedule = optimization.learning_rate(step_plan)
    assert float(schedule(0)) == 0.0
    for epoch in (3, 10, 47):  # after the 3 warmup epochs: 0.64 x 0.9 per whole epoch
        lr = float(schedule(epoch * steps_per_epoch + 1))
        assert lr == pytest.approx(0.64 * 0.9**epoch, rel=1e-5)
    quarter_pod = optimization.learning_rate(plan(312, 48 * 312, 4096))
    assert float(quarter_pod(3 * 312 + 1)) == pytest.approx(10.24 * 0.9**3, rel=1e-5)
    config = optimization.build_optimizer(step_plan).get_config()
    assert config["name"] == "RMSprop"
    assert (config["rho"], config["momentum"], config["epsilon"]) == (0.9, 0.9, 1.0)
    assert optimization.ema_decay() == 0.9999
    assert optimization.weight_decay_rate() == 4e-5
    task = AmoebaNetTask(model=RunSpec().model)
    assert (task.label_smoothing, task.aux_loss_weight, task.input.image_size) == (0.1, 0.4, 299)
    assert task.input.color_distortion == "brightness_chroma"  # distort_color_fast
    assert task.input.mean_rgb == task.input.stddev_rgb == (127.5, 127.5, 127.5)
    assert gin.query_parameter("amoebanet.num_cells") == 12
    assert gin.query_parameter("amoebanet.filters") == 256
    assert gin.query_parameter("train.epochs") == 48


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"num_cells": 1}, "num_cells=1"),
        ({"filters": 30}, "multiple of 4"),
        ({"stem_type": "cifar"}, "imagenet or basic"),
        ({"drop_path_keep_prob": 0.0}, r"\(0, 1\]"),
        ({"drop_path_keep_prob": 1.5}, r"\(0, 1\]"),
        ({"dropout_rate": 1.0}, r"\[0, 1\)"),
        ({"image_size": 64, "num_cells": 3, "filters": 8}, "use_aux_head"),
    ],
)
def test_bad_settings_are_usage_errors(overrides, message):
    with pytest.raises(UsageError, match=message):
        registry.create_model("amoebanet_d", **overrides)


def test_drop_path_only_in_training():
    plain = registry.create_model("amoebanet_d_small", num_classes=10)
    assert not any(isinstance(x, ScheduledDropPath) for x in plain.network.layers)
    net = registry.create_model("amoebanet_d_small", num_classes=10, drop_path_keep_prob=0.5)
    # 8 non-identity branches in each of the 4 cells (2 reduction, 2 normal)
    assert sum(isinstance(x, ScheduledDropPath) for x in net.network.layers) == 32
    images = tf.random.uniform([8, 32, 32, 3])

    def outputs(progress: float, training: bool) -> list[np.ndarray]:
        net.drop_path_progress.assign(progress)
        return [net(images, training=training).numpy() for _ in range(2)]

    eval_full, eval_none = outputs(1.0, False), outputs(0.0, False)
    np.testing.assert_array_equal(eval_full[0], eval_none[0])  # eval: drop path is off
    np.testing.assert_array_equal(*eval_full)
    np.testing.assert_array_equal(*outputs(0.0, True))  # training, rate still 0
    assert not np.allclose(*outputs(1.0, True))  # training at rate 0.5: random paths dropped
    layer = ScheduledDropPath(0.5, net.drop_path_progress)
    ones = tf.ones([256, 2, 2, 3])
    assert set(np.unique(layer(ones, training=True))) == {0.0, 2.0}  # per example, / keep
    np.testing.assert_array_equal(layer(ones, training=False), ones)


def test_task_trains_aux_head_and_ramps_drop_path(digits_dir):
    bindings = ["amoebanet.use_aux_head = True", "amoebanet.drop_path_keep_prob = 0.7"]
    gin_config.parse(["amoebanet/default.gin"], bindings)
    strategy = build_strategy(slice_name="cpu-1")
    task = AmoebaNetTask(model=RunSpec().model, seed=0)
    state = build_training_state(task, strategy, plan(20, 100, 64))
    model = state.models["model"]
    assert isinstance(model, AmoebaNet) and model.has_aux_head
    aux_kernel = model.aux_network.get_layer("aux_logits").kernel
    before = aux_kernel.numpy()
    Trainer(task, strategy, state, 64).train(tf.constant(2))
    assert not np.allclose(aux_kernel.numpy(), before)  # the auxiliary loss reaches its head
    assert float(model.drop_path_progress.numpy()) == pytest.approx(1 / 100)  # step 1 of 100
