"""The Compare GAN study's matrix (Kurach et al. 2019): architecture x loss x penalty x
discriminator normalisation, each combination built at 32x32 and taking one training step
through the image generation task and core's Trainer (width 8, batch 2, three classes,
eagerly), changing both models' weights with finite losses.

`make test` runs 16 combinations that hold every value pair of any two of the four factors (for
loss i and normalisation k, architecture (i + k) mod 3 and penalty (i + 2k) mod 3); the other
128 are marked `exhaustive` and run in `make acceptance`."""

from __future__ import annotations

import itertools

import gin
import numpy as np
import pytest
import tensorflow as tf
import tf_keras
from zoo_testing import plan

from models.compare_gan.layers import D_NORMALIZATIONS
from models.compare_gan.model import ARCHITECTURES
from models.core.strategy import build_strategy
from models.core.trainer import Trainer, build_training_state
from models.tasks.image_generation import LOSSES, PENALTIES, ImageGenerationTask

VARIANTS = {"sndcgan": "sndcgan_32", "resnet": "sngan_resnet_32", "biggan": "biggan_32"}
BATCH = 2


def _weights(model) -> list[np.ndarray]:
    return [v.numpy().copy() for v in model.trainable_variables]


ALL = [
    (architecture, loss, penalty, normalization)
    for architecture in sorted(ARCHITECTURES)
    for loss in LOSSES
    for penalty in PENALTIES
    for normalization in D_NORMALIZATIONS
]


def _pairwise() -> list[tuple[str, str, str, str]]:
    """A covering array of strength 2 over the four factors (3 architectures, 4 losses,
    3 penalties, 4 normalisations)."""
    architectures = sorted(ARCHITECTURES)
    return [
        (architectures[(i + k) % 3], loss, PENALTIES[(i + 2 * k) % 3], normalization)
        for i, loss in enumerate(LOSSES)
        for k, normalization in enumerate(D_NORMALIZATIONS)
    ]


PAIRWISE = _pairwise()
CASES = [
    pytest.param(*case, marks=[] if case in PAIRWISE else [pytest.mark.exhaustive]) for case in ALL
]


def test_the_pairwise_cases_hold_every_pair_of_settings():
    for a, b in itertools.combinations(range(4), 2):
        wanted = {(case[a], case[b]) for case in ALL}
        assert {(case[a], case[b]) for case in PAIRWISE} == wanted, (a, b)


@pytest.mark.parametrize(("architecture", "loss", "penalty", "normalization"), CASES)
def test_every_combination_takes_a_training_step(
    architecture, loss, penalty, normalization, eagerly
):
    gin.parse_config(
        [
            "classification_input.image_size = 32",
            "classification_input.num_classes = 3",
            "compare_gan.width = 8",
            "compare_gan.z_dim = 16",
            "compare_gan.initializer = 'normal'",
            f"compare_gan.d_normalization = '{normalization}'",
            f"ImageGenerationTask.loss = '{loss}'",
            f"ImageGenerationTask.penalty = '{penalty}'",
        ]
    )
    tf_keras.utils.set_random_seed(0)
    task = ImageGenerationTask(model=VARIANTS[architecture], seed=0)
    strategy = build_strategy(slice_name="cpu-1")
    state = build_training_state(task, strategy, plan(1, 1, BATCH))
    before = {name: _weights(model) for name, model in state.models.items()}
    trainer = Trainer(task, strategy, state, BATCH, synthetic_input=True)
    logs = trainer.train(tf.constant(1))
    for key in ("discriminator_loss", "generator_loss", "penalty"):
        assert np.isfinite(float(logs[key])), logs
    assert (float(logs["penalty"]) > 0) == (penalty != "none")
    for name, model in state.models.items():
        after = _weights(model)
        assert any(not np.array_equal(a, b) for a, b in zip(before[name], after, strict=True)), name
