"""The task contract, driven through the real Experiment, Trainer and Evaluator with small
test-only tasks (tests/core/contract_tasks.py) shaped like the families still to come."""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
from pathlib import Path

import gin
import numpy as np
import pytest
import tensorflow as tf
import tf_keras
from contract_tasks import AdversarialTask, BackboneTask, DetectionLikeTask, RegressionTask
from zoo_testing import PYTHON, latest_record, latest_step, wait_for

from models.core.errors import UsageError
from models.core.experiment import Experiment, RunOptions
from models.core.settings import TrainSettings
from models.core.strategy import build_strategy

CONSTANT_SGD = [
    'optimizer.name = "sgd"',
    'learning_rate.decay = "constant"',
    "learning_rate.base_batch_size = None",
]


def _experiment(task, model_dir, *bindings, slice_name="cpu-1", mode="train_and_eval"):
    """The Experiment core's main() would build for `task` under these gin bindings."""
    gin.clear_config()
    gin.parse_config([*CONSTANT_SGD, *bindings])
    tf_keras.utils.set_random_seed(0)
    options = RunOptions(
        model_dir=str(model_dir),
        mode=mode,
        model_name="contract",
        family="contract",
        recipe="test",
        slice_name=slice_name,
        precision="float32",
        seed=0,
    )
    return Experiment(task, build_strategy(slice_name=slice_name), TrainSettings(), options)


# ---------------------------------------------------------------- two models, two optimisers

RUNNER = (
    "import sys; sys.path.insert(0, {tests!r}); import contract_tasks; "
    "contract_tasks.register_for_cli(); from models.core.main import main; main('contract')"
)
GAN_RECIPE = """
run.task = @AdversarialTask
run.model = "contract_gan"
train.global_batch_size = 8
train.steps_per_loop = 5
train.checkpoint_every_steps = 5
optimizer.name = "sgd"
learning_rate.decay = "constant"
learning_rate.base_batch_size = None
generator/learning_rate.base_lr = 0.05
discriminator/learning_rate.base_lr = 0.02
"""


def _gan_command(model_dir: Path, recipe: Path, steps: int) -> list[str]:
    runner = RUNNER.format(tests=str(Path(__file__).parent))
    return [PYTHON, "-c", runner, f"--model_dir={model_dir}", f"--gin_file={recipe}"] + [
        "--mode=train",
        f"--gin_param=train.steps = {steps}",
    ]


def _checkpoint_values(model_dir: Path) -> dict[str, np.ndarray]:
    reader = tf.train.load_checkpoint(str(model_dir))
    names = [n for n in reader.get_variable_to_shape_map() if "OBJECT_GRAPH" not in n]
    return {name: reader.get_tensor(name) for name in names if "save_counter" not in name}


@pytest.mark.slow
def test_two_models_train_log_both_losses_and_resume_both_after_a_kill(tmp_path, cli_env):
    recipe = tmp_path / "gan.gin"
    recipe.write_text(GAN_RECIPE)
    killed = tmp_path / "killed"
    process = subprocess.Popen(
        _gan_command(killed, recipe, 10**6), env=cli_env, stdout=subprocess.PIPE, text=True
    )
    wait_for(lambda: latest_step(killed) >= 10, process, timeout=300)
    process.send_signal(signal.SIGKILL)
    process.wait()
    saved = latest_step(killed)
    resumed = subprocess.run(
        _gan_command(killed, recipe, saved + 10), env=cli_env, capture_output=True, text=True
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"resumed from checkpoint at step {saved}" in resumed.stdout
    for log in ("generator_loss", "discriminator_loss", "learning_rate/generator"):
        assert log in resumed.stdout and log in latest_record(killed)["train_logs"]
    reference = tmp_path / "reference"
    straight = subprocess.run(
        _gan_command(reference, recipe, saved + 10), env=cli_env, capture_output=True, text=True
    )
    assert straight.returncode == 0, straight.stderr[-3000:]
    # Same batch every step and a constant rate: a run resumed with both models' weights and
    # both optimisers' state (iterations, momentum) ends exactly where an unbroken run does.
    want, got = _checkpoint_values(reference), _checkpoint_values(killed)
    assert set(got) == set(want) and any("optimizer_discriminator" in n for n in got)
    for name, value in want.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-7, err_msg=name)


def test_two_models_read_their_optimisers_from_their_own_gin_scopes(tmp_path):
    experiment = _experiment(
        AdversarialTask(),
        tmp_path,
        "train.global_batch_size = 8",
        "train.steps = 4",
        "generator/learning_rate.base_lr = 0.05",
        'discriminator/optimizer.name = "adam"',
        "discriminator/learning_rate.base_lr = 0.001",
        mode="train",
    )
    generator, discriminator = (
        experiment.optimizers["generator"],
        experiment.optimizers["discriminator"],
    )
    assert isinstance(generator, tf_keras.optimizers.SGD)
    assert isinstance(discriminator, tf_keras.optimizers.Adam)
    results = experiment.run()
    assert results["step"] == 4 and int(generator.iterations) == int(discriminator.iterations) == 4


# ---------------------------------------------------------------- nested eval outputs


def test_nested_eval_outputs_are_gathered_alike_over_one_two_and_four_replicas(tmp_path):
    bindings = ("train.global_batch_size = 8", "train.steps = 2", "learning_rate.base_lr = 0.1")
    trained = tmp_path / "trained"
    _experiment(DetectionLikeTask(), trained, *bindings, mode="train").run()
    metrics = {}
    for slice_name, replicas in (("cpu-1", 1), ("cpu-2", 2), ("cpu-4", 4)):
        model_dir = tmp_path / slice_name
        shutil.copytree(trained, model_dir)
        task = DetectionLikeTask()
        metrics[slice_name] = _experiment(
            task, model_dir, *bindings, slice_name=slice_name, mode="eval"
        ).run()
        np.testing.assert_array_equal(task.seen_ids, np.arange(DetectionLikeTask.examples))
        assert len(task.batch_sizes) == 5 * replicas  # a scalar: one value per replica and step
    assert metrics["cpu-1"]["examples_read"] == 40.0  # 36 examples, padded to 5 batches of 8
    for slice_name in ("cpu-2", "cpu-4"):
        assert metrics[slice_name].keys() == metrics["cpu-1"].keys()
        for name, value in metrics["cpu-1"].items():
            assert metrics[slice_name][name] == pytest.approx(value, rel=1e-6), name


def test_named_evaluations_run_at_their_own_cadence_and_prefix_their_metrics(tmp_path):
    experiment = _experiment(
        RegressionTask(),
        tmp_path,
        "train.global_batch_size = 16",
        "train.steps = 20",
        "learning_rate.base_lr = 0.1",
        "train.evaluations = {'validation': @validation/evaluation(), 'rare': @rare/evaluation()}",
        "validation/evaluation.every_steps = 5",
        "rare/evaluation.every_steps = 10",
        "rare/evaluation.batch_size = 32",
    )
    results = experiment.run()
    curve = latest_record(tmp_path)["eval_curve"]
    assert [point["step"] for point in curve] == [5, 10, 15, 20]
    assert ["rare/mse" in point for point in curve] == [False, True, False, True]
    assert results["examples"] == results["rare/examples"] == 64.0
    assert (tmp_path / "summaries" / "eval_rare").is_dir()


# ---------------------------------------------------------------- lower is better


def test_a_lower_is_better_target_stops_the_run_when_reached(tmp_path):
    experiment = _experiment(
        RegressionTask(),
        tmp_path,
        "train.global_batch_size = 16",
        "train.steps = 1000",
        "evaluation.every_steps = 10",
        "learning_rate.base_lr = 0.1",
        'train.target_metric = "mse"',
        "train.target_value = 0.01",
    )
    results = experiment.run()
    # A higher-is-better reading would stop at the first eval (mse ~3 >= 0.01).
    assert 10 < results["step"] < 1000 and results["mse"] <= 0.01
    record = latest_record(tmp_path)
    assert record["status"] == "success" and record["target_direction"] == "lower"
    assert record["time_to_accuracy_s"] > 0
    log = next((tmp_path / "records").glob("*.mlperf.log")).read_text()
    assert '"status": "success"' in log


@pytest.mark.slow
def test_a_run_stops_only_when_every_also_reach_target_stands_too(tmp_path):
    experiment = _experiment(
        RegressionTask(),
        tmp_path,
        "train.global_batch_size = 16",
        "train.steps = 1000",
        "evaluation.every_steps = 10",
        "learning_rate.base_lr = 0.05",
        'train.target_metric = "mse"',
        "train.target_value = 1.0",
        'train.also_reach = {"mae": 0.05}',
    )
    results = experiment.run()
    assert results["mse"] <= 1.0 and results["mae"] <= 0.05
    record = latest_record(tmp_path)
    assert record["status"] == "success" and record["also_reach"] == {"mae": 0.05}
    curve = record["eval_curve"]
    passed_mse_alone = [p for p in curve[:-1] if p["mse"] <= 1.0]
    assert passed_mse_alone and all(p["mae"] > 0.05 for p in passed_mse_alone)


@pytest.mark.parametrize(
    ("binding", "message"),
    [
        ('train.also_reach = {"mea": 0.05}', "train.also_reach['mea'] is not an eval metric"),
        ('train.also_reach = {"mae": "low"}', "expected a dict of str to a number or None"),
    ],
)
def test_a_bad_also_reach_target_is_one_line(tmp_path, binding, message):
    bindings = ['train.target_metric = "mse"', "train.target_value = 1.0", "train.steps = 20"]
    with pytest.raises(UsageError, match=re.escape(message)):
        _experiment(RegressionTask(), tmp_path, *bindings, binding).run()


# ---------------------------------------------------------------- steps, no dataset size


def test_a_recipe_in_steps_trains_a_dataset_of_unknown_size(tmp_path, capsys):
    experiment = _experiment(
        RegressionTask(),
        tmp_path,
        "train.global_batch_size = 16",
        "train.steps = 20",
        "evaluation.every_steps = 10",
        "learning_rate.base_lr = 0.1",
        "learning_rate.warmup_steps = 5",
    )
    results = experiment.run()
    assert results["step"] == 20 and "epoch" not in results
    assert results["examples"] == 64.0  # the finite split, read to its end
    record = latest_record(tmp_path)
    assert record["epochs"] is None and [p["step"] for p in record["eval_curve"]] == [10, 20]
    assert "step 10/20 | train loss" in capsys.readouterr().out


def test_epochs_on_a_dataset_of_unknown_size_is_one_line(tmp_path):
    with pytest.raises(UsageError, match="train.epochs needs the dataset's size"):
        _experiment(RegressionTask(), tmp_path, "train.epochs = 2")


def test_a_length_given_twice_is_one_line(tmp_path):
    with pytest.raises(UsageError, match="train.steps and train.epochs are both set"):
        _experiment(RegressionTask(), tmp_path, "train.steps = 5", "train.epochs = 2")


# ---------------------------------------------------------------- init checkpoint


def _backbone_run(model_dir, *bindings, width: int = 8, mode: str = "train") -> Experiment:
    task = BackboneTask()
    task.width = width
    return _experiment(
        task, model_dir, "train.global_batch_size = 16", "train.steps = 5", *bindings, mode=mode
    )


def _weights(layer) -> list[np.ndarray]:
    return [np.array(w) for w in layer.get_weights()]


def test_init_checkpoint_restores_the_backbone_only_and_never_on_resume(tmp_path, capsys):
    source = _backbone_run(tmp_path / "source", "learning_rate.base_lr = 0.1")
    source.run()
    init = (
        f"train.init_checkpoint = '{tmp_path / 'source'}'",
        "train.init_checkpoint_modules = ('model/backbone',)",
    )
    target = _backbone_run(tmp_path / "target", "learning_rate.base_lr = 0.1", *init)
    source_model, model = source.models["model"], target.models["model"]
    for got, want in zip(_weights(model.backbone), _weights(source_model.backbone), strict=True):
        np.testing.assert_array_equal(got, want)
    assert not np.array_equal(_weights(model.head)[0], _weights(source_model.head)[0])
    assert "initialised model/backbone from" in capsys.readouterr().out
    target.run()
    trained = _weights(model.backbone)
    resumed = _backbone_run(tmp_path / "target", "learning_rate.base_lr = 0.1", *init)
    assert int(resumed.global_step.numpy()) == 5
    for got, want in zip(_weights(resumed.models["model"].backbone), trained, strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    "bindings, width, message",
    [
        (("train.init_checkpoint = '{source}/none'",), 8, "no such checkpoint"),
        (("train.init_checkpoint_modules = ('model/neck',)",), 8, "no module 'neck'"),
        (("train.init_checkpoint_modules = ('decoder',)",), 8, "names no model"),
        ((), 16, "cannot restore model/backbone"),
    ],
)
def test_init_checkpoint_that_does_not_fit_is_one_line(tmp_path, bindings, width, message):
    source = tmp_path / "source"
    _backbone_run(source).run()
    init = [
        f"train.init_checkpoint = '{source}'",
        "train.init_checkpoint_modules = ('model/backbone',)",
    ]
    init += [b.format(source=source) for b in bindings]
    with pytest.raises(UsageError, match=message) as error:
        _backbone_run(tmp_path / "target", *init, width=width)
    assert "\n" not in str(error.value)
    assert not list((tmp_path / "target").glob("ckpt-*"))


def test_records_name_the_variant_and_log_every_train_scalar(tmp_path):
    _experiment(AdversarialTask(), tmp_path, "train.global_batch_size = 8", "train.steps = 3").run()
    record = latest_record(tmp_path)
    assert record["model"] == "contract" and record["family"] == "contract"
    assert {"generator_loss", "discriminator_loss", "learning_rate/discriminator"} <= set(
        record["train_logs"]
    )
    assert "distance" in record["final_metrics"]
    assert json.loads(json.dumps(record)) == record


def test_continuous_eval_scores_every_evaluation_of_the_latest_checkpoint(tmp_path, capsys):
    bindings = (
        "train.global_batch_size = 16",
        "train.steps = 10",
        "learning_rate.base_lr = 0.1",
        "train.evaluations = {'validation': @validation/evaluation(), 'rare': @rare/evaluation()}",
        "train.continuous_eval_timeout_s = 1",
    )
    _experiment(RegressionTask(), tmp_path, *bindings, mode="train").run()
    metrics = _experiment(RegressionTask(), tmp_path, *bindings, mode="continuous_eval").run()
    assert metrics["mse"] == metrics["rare/mse"] and metrics["examples"] == 64.0
    assert "step 10/10 |" in capsys.readouterr().out


# ---------------------------------------------------------------- a stop during an evaluation


class _StoppedOnceInEvaluation(RegressionTask):
    """SIGTERM to its own process while aggregating the step-10 evaluation's first batch, once
    (`step` reads the running experiment's global step)."""

    step = staticmethod(lambda: 0)
    signalled = False

    def aggregate_logs(self, state, step_outputs, evaluation):
        if not self.signalled and self.step() == 10:
            self.signalled = True
            signal.raise_signal(signal.SIGTERM)
        return super().aggregate_logs(state, step_outputs, evaluation)


def test_a_stop_during_an_evaluation_saves_its_step_and_the_rerun_evaluates_it(tmp_path):
    from models.core.checkpoint import Preempted

    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    bindings = ("train.global_batch_size = 16", "train.steps = 20", "evaluation.every_steps = 10")
    task = _StoppedOnceInEvaluation()
    try:
        experiment = _experiment(task, tmp_path, *bindings)
        task.step = lambda: int(experiment.global_step.numpy())
        with pytest.raises(Preempted) as stopped:
            experiment.run()
        assert stopped.value.step == 10 and latest_step(tmp_path) == 10
        assert latest_record(tmp_path)["eval_curve"] == []  # the evaluation never finished
        rerun = _experiment(task, tmp_path, *bindings)
        task.step = lambda: int(rerun.global_step.numpy())
        results = rerun.run()
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    assert results["step"] == 20
    assert [p["step"] for p in latest_record(tmp_path)["eval_curve"]] == [10, 20]
