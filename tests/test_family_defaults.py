"""What every family's default recipe must do (issue: same spine): reach its target on its
built-in data through its CLI (97% top-1 on the digits, a box AP on the digit scenes, a mean
IoU on their class masks), compile its train step with XLA, and run on a simulated 2-replica
slice. ResNet has fuller versions of these in tests/resnet and tests/core/test_trainer.py."""

from __future__ import annotations

import pytest
from family_checks import check_reaches_target, check_runs_on_cpu2, check_xla_train_step
from zoo_testing import DETECTION_TASKS

from models import registry

FAMILIES = sorted({registry.model_entry(n).family for n in registry.list_models()} - {"resnet"})
# The dense-prediction target runs (the detectors' and DeepLab's) take longest: conftest.py
# starts them first, one after the other on one pytest worker (side by side, two trainings that
# each take both cores run at half speed).
LONGEST = {
    registry.model_entry(n).family
    for n in registry.list_models()
    if registry.model_entry(n).task in (*DETECTION_TASKS, "SemanticSegmentationTask")
}
LONGEST_MARKS = [pytest.mark.longest, pytest.mark.xdist_group("dense_prediction_targets")]
# TensorFlow's combined NMS, which Mask R-CNN's default recipe proposes with on CPU, has no XLA
# kernel: its XLA check compiles the padded NMS of the TPU recipes instead.
XLA_PARAMS = {"mask_rcnn": ("mask_rcnn.proposal_nms = 'padded'",)}
# BERT's pretraining run is also where its fine-tuning starts: tests/bert/test_targets.py; the
# Transformer's run is also what its export and BLEU checks read: tests/transformer.
CHAINED = {"bert", "transformer"}
TARGET_RUNS = [
    pytest.param(family, marks=LONGEST_MARKS if family in LONGEST else [])
    for family in FAMILIES
    if family not in CHAINED
]


def test_every_family_is_checked():
    families = {"amoebanet", "bert", "efficientnet", "inception", "mnasnet", "mobilenet"}
    families |= {"retinanet", "mask_rcnn", "object_detection", "transformer"}
    families |= {"dcgan", "compare_gan", "deeplab"}
    assert families <= set(FAMILIES)


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_default_recipe_train_step_compiles_with_xla(family, digits_dir):
    check_xla_train_step(f"{family}/default.gin", XLA_PARAMS.get(family, ()))


@pytest.mark.target
@pytest.mark.parametrize("family", TARGET_RUNS)
def test_default_recipe_reaches_target(family, tmp_path, cli_env):
    check_reaches_target(family, tmp_path, cli_env)


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_default_recipe_runs_on_simulated_two_replica_slice(family, tmp_path, cli_env):
    check_runs_on_cpu2(family, tmp_path, cli_env)
