"""Every family's memorisation check (tests/memorisation.py, the table in
tests/memorisation_checks.py): its default recipe, with its data cut to one batch that is also
the evaluation set, trains through its CLI until its real metric is near perfect on that batch;
with a bug put in its training or evaluation (tests/breakages.py), the check fails. BERT's, the
Transformer's and the ASR Transformer's checks run in their chain tests
(tests/bert/test_bert_chain.py, tests/transformer/test_translation_chain.py,
tests/asr_transformer/test_asr_chain.py), which go on to fine-tune, export and serve. What a
default recipe reaches on its full built-in data is `make acceptance`'s check (README, "Tests")."""

from __future__ import annotations

import pytest
from memorisation import check_fails, check_memorises, evaluate, meets
from memorisation_checks import BY_NAME, CHECKS
from serving_checks import check_user_modes

from models.core import registry


def test_every_family_has_a_memorisation_check():
    families = {registry.model_entry(name).family for name in registry.list_models()}
    assert families == {spec.family for spec in CHECKS}


CHAINED = {"asr_transformer", "bert", "transformer"}


@pytest.mark.memorise
@pytest.mark.parametrize("name", [spec.name for spec in CHECKS if spec.family not in CHAINED])
def test_memorises_one_batch(name, tmp_path, cli_env):
    """The check passes; the run's export, served in a fresh process, and `--mode=predict`
    answer as the memorised model does (tests/serving_checks.py); `--mode=eval` of the
    memorised checkpoint meets the check, or, where the family's check also guards its
    evaluation, fails it with a bug put in the evaluation (tests/breakages.py)."""
    spec, run = BY_NAME[name], tmp_path / "run"
    check_memorises(spec, run, cli_env)
    check_user_modes(spec, run, cli_env, tmp_path)
    if spec.eval_breakage:  # --mode=eval (the CLI under runpy) with the bug, and without it
        broken = evaluate(spec, run, cli_env, breakage=spec.eval_breakage)
        assert not meets(spec, broken), f"{spec.eval_breakage}: {broken}"
    else:  # --mode=eval of the memorised checkpoint
        evaluated = evaluate(spec, run, cli_env)
        assert meets(spec, evaluated), evaluated


@pytest.mark.memorise
@pytest.mark.parametrize(
    "name", [s.name for s in CHECKS if s.train_breakage and s.family not in CHAINED]
)
def test_a_training_bug_fails_the_check(name, tmp_path, cli_env):
    """The same check, with a bug put in the family's training (tests/breakages.py), fails."""
    spec = BY_NAME[name]
    check_fails(spec, tmp_path / "run", cli_env, spec.train_breakage)
