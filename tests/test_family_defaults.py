"""What every family's default recipe must do (issue: same spine): reach its target on its
built-in data through its CLI (97% top-1 on the digits, a box AP on the digit scenes), compile
its train step with XLA, and run on a simulated 2-replica slice. ResNet has fuller versions
of these in tests/resnet and tests/core/test_trainer.py."""

from __future__ import annotations

import pytest
from family_checks import check_reaches_target, check_runs_on_cpu2, check_xla_train_step
from zoo_testing import DETECTION_TASKS

from models import registry

FAMILIES = sorted({registry.model_entry(n).family for n in registry.list_models()} - {"resnet"})
# The detectors' target runs take longest: conftest.py starts them first, one per worker.
DETECTORS = {
    registry.model_entry(n).family
    for n in registry.list_models()
    if registry.model_entry(n).task in DETECTION_TASKS
}
TARGET_RUNS = [
    pytest.param(family, marks=[pytest.mark.longest] if family in DETECTORS else [])
    for family in FAMILIES
]


def test_every_family_is_checked():
    families = {"amoebanet", "efficientnet", "inception", "mnasnet", "mobilenet", "retinanet"}
    assert families <= set(FAMILIES)


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_default_recipe_train_step_compiles_with_xla(family, digits_dir):
    check_xla_train_step(f"{family}/default.gin")


@pytest.mark.target
@pytest.mark.parametrize("family", TARGET_RUNS)
def test_default_recipe_reaches_target(family, tmp_path, cli_env):
    check_reaches_target(family, tmp_path, cli_env)


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_default_recipe_runs_on_simulated_two_replica_slice(family, tmp_path, cli_env):
    check_runs_on_cpu2(family, tmp_path, cli_env)
