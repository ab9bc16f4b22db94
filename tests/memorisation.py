"""The memorisation check ("overfit one batch"): a family's recipe, with its data cut to one
small batch that is also its evaluation set (tests/one_batch_data.py), trains through its CLI
until its real metric, computed by its real evaluation code, is near perfect on that batch, and
its training loss falls well below the untrained model's (its first step's). It catches broken
gradients, losses, label alignment, decoders and metrics in seconds; tests/test_memorisation.py
runs it for every family and, with the code broken on purpose (tests/breakages.py), expects it
to fail."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, replace

from one_batch_data import one_batch
from zoo_testing import PYTHON, REPO, latest_record, model_command

from benchmarks import mlperf_compliance

LAST_STEPS = 5  # the mean training loss of the last steps, against the first step's
TIMEOUT_S = 600  # a hang guard: each check takes well under a minute on an idle 2-core VM


@dataclass(frozen=True)
class Memorise:
    """One family's memorisation check: its recipe, the built-in data cut to `examples`, the
    metric that must reach `threshold` (its untrained value beside it, measured once), and the
    gin settings that narrow the model or turn off augmentation (the code path unchanged)."""

    family: str
    data: str
    examples: int
    metric: str
    threshold: float
    untrained: float
    steps: int = 200
    every: int = 10
    warmup: int = 10  # steps of learning-rate warmup (the recipes' are in epochs or examples)
    recipe: str | None = None
    slice: str = "cpu-2"  # two replicas: the batch split, eval outputs gathered, as on a slice
    params: tuple[str, ...] = ()
    also: tuple[tuple[str, float], ...] = ()  # further metrics that must reach their values
    loss: str | None = "loss"  # the training loss that must fall; None: no single loss (GANs)
    train_breakage: str | None = None  # tests/breakages.py: a bug in training the check catches
    fails_within: int | None = None  # steps the broken run trains (default `steps`): past the
    # step where the healthy run reaches its threshold
    eval_breakage: str | None = None  # and one in evaluation, caught on the memorised checkpoint

    @property
    def name(self) -> str:
        return self.family if self.recipe is None else self.recipe.removesuffix(".gin")

    def arguments(self, data_dir: str) -> list[str]:
        """The CLI's flags: one batch of `examples`, evaluated on itself every `every` steps
        until the metric reaches its threshold (time-to-accuracy mode) or `steps` run out."""
        settings = {
            "train.global_batch_size": self.examples,
            "train.epochs": None,
            "train.examples": None,
            "train.steps": self.steps,
            "train.steps_per_loop": 1,  # every step's loss printed: the first is the untrained one
            "train.checkpoint_every_steps": self.steps,  # and at the stop, for --mode=eval/export
            "evaluation.every_epochs": None,
            "evaluation.every_examples": None,
            "evaluation.every_steps": self.every,
            "evaluation.batch_size": self.examples,
            "learning_rate.warmup_epochs": None,
            "learning_rate.warmup_examples": None,
            "learning_rate.warmup_steps": self.warmup,
            "train.target_metric": repr(self.metric),
            "train.target_value": self.threshold,
            "train.also_reach": dict(self.also) or None,
        }
        recipe = [f"--gin_file={self.recipe}"] if self.recipe else []
        params = [f"--gin_param={k} = {v}" for k, v in settings.items()] + [
            f"--gin_param={p}" for p in self.params
        ]
        return [*recipe, f"--slice={self.slice}", f"--data_dir={data_dir}", *params]


def command(spec: Memorise, model_dir, breakage: str | None = None) -> list[str]:
    """`python -m models.<family> ...` as a user types it; with a breakage, the same module run
    after tests/breakages.py has broken one piece of the code."""
    arguments = spec.arguments(one_batch(spec.data, spec.examples))
    plain = model_command(spec.family, model_dir, *arguments)
    if breakage is None:
        return plain
    script = (
        f"import sys, runpy; sys.path.insert(0, {str(REPO / 'tests')!r}); "
        f"import breakages; breakages.apply({breakage!r}); sys.argv[0] = 'models.{spec.family}'; "
        f"runpy.run_module('models.{spec.family}', run_name='__main__', alter_sys=True)"
    )
    return [PYTHON, "-c", script, *plain[3:]]


@dataclass
class Outcome:
    """What one memorisation run showed."""

    reached: bool
    metrics: dict
    curve: list[float]
    losses: list[float]
    output: str

    def summary(self, spec: Memorise) -> str:
        return (
            f"{spec.name}: {spec.metric} per evaluation {self.curve}, "
            f"train {spec.loss} per step {[round(x, 3) for x in self.losses]}"
        )


def memorise(spec: Memorise, model_dir, env: dict, breakage: str | None = None) -> Outcome:
    """Runs the check's training; returns what it reached."""
    result = subprocess.run(
        command(spec, model_dir, breakage),
        capture_output=True,
        text=True,
        env=env,
        timeout=TIMEOUT_S,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    record = latest_record(model_dir)
    curve = [round(point[spec.metric], 4) for point in record["eval_curve"]]
    pattern = rf"'{re.escape(spec.loss or '')}': ([-0-9.e+naif]+)"
    losses = [float(x) for x in re.findall(pattern, result.stdout)] if spec.loss else []
    return Outcome(
        reached=record["status"] == "success",
        metrics=record["final_metrics"],
        curve=curve,
        losses=losses,
        output=result.stdout + result.stderr,
    )


def shortfalls(spec: Memorise, outcome: Outcome) -> list[str]:
    """How the run fell short of memorising its batch (empty when it did): the metric must
    reach its threshold, every `also` metric its value, and the mean training loss of the last
    steps must be under a third of the first step's."""
    missed = [] if outcome.reached else [f"{spec.metric} never reached {spec.threshold}"]
    missed += [
        f"{name} {outcome.metrics.get(name)} < {value}"
        for name, value in spec.also
        if outcome.metrics.get(name, float("-inf")) < value
    ]
    if spec.loss:
        first, last = outcome.losses[:1], outcome.losses[-LAST_STEPS:]
        if len(outcome.losses) <= LAST_STEPS or sum(last) / len(last) >= first[0] / 3:
            missed.append(f"{spec.loss} did not fall under a third of its first step's")
    return missed


def check_memorises(spec: Memorise, model_dir, env: dict) -> Outcome:
    """The run memorises its batch (see `shortfalls`), and its MLPerf log passes MLPerf's
    compliance checker under the rules for its family (benchmarks/mlperf_compliance.py)."""
    outcome = memorise(spec, model_dir, env)
    missed = shortfalls(spec, outcome)
    assert not missed, f"{'; '.join(missed)}. {outcome.summary(spec)}"
    compliance = mlperf_compliance.check(mlperf_compliance.newest_log(str(model_dir)))
    assert compliance["passed"], mlperf_compliance.render(compliance)
    return outcome


def check_fails(spec: Memorise, model_dir, env: dict, breakage: str) -> Outcome:
    """With `breakage` put in, the run ends normally and the check says it did not memorise
    (its metric never reached the threshold) in `fails_within` steps, evaluated 4 times."""
    steps = spec.fails_within or spec.steps
    outcome = memorise(replace(spec, steps=steps, every=steps // 4), model_dir, env, breakage)
    assert shortfalls(spec, outcome) and not outcome.reached, outcome.summary(spec)
    return outcome


def run_mode(spec: Memorise, model_dir, env: dict, *args: str, breakage: str | None = None) -> str:
    """The check's command with ARGS (`--mode=export`, ...) on its model_dir; its stdout."""
    result = subprocess.run(
        [*command(spec, model_dir, breakage), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=TIMEOUT_S,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def export(spec: Memorise, model_dir, env: dict) -> str:
    """`--mode=export` of the run's latest checkpoint; the SavedModel's directory."""
    stdout = run_mode(spec, model_dir, env, "--mode=export")
    return re.search(r"exported SavedModel to (\S+)", stdout).group(1)


def evaluate(spec: Memorise, model_dir, env: dict, breakage: str | None = None) -> dict:
    """`--mode=eval` of the run's latest checkpoint on the same batch, on a simulated 2-replica
    slice whatever the training's (outputs gathered over replicas): its metrics (those the
    done line shows as n/a, e.g. APl of a batch without large objects, left out)."""
    stdout = run_mode(spec, model_dir, env, "--mode=eval", "--slice=cpu-2", breakage=breakage)
    done = [line for line in stdout.splitlines() if line.startswith("done: ")][-1]
    pairs = (item.split("=", 1) for item in done.removeprefix("done: ").split(", "))
    return {name: float(value) for name, value in pairs if value != "n/a"}


def meets(spec: Memorise, metrics: dict) -> bool:
    """Whether `metrics` reach the check's threshold (at or below it for a FID or WER) and every
    `also` metric its value."""
    value = metrics[spec.metric]
    lower = spec.metric.startswith("fid") or spec.metric == "wer"
    reached = value <= spec.threshold if lower else value >= spec.threshold
    return reached and all(metrics[name] >= least for name, least in spec.also)
