"""What a run's MLPerf log says beyond its events: the submission keys (gin `mlperf.*`) and,
when a recipe sets `mlperf.hyperparameters = "resnet"`, MLPerf ResNet's closed-division
hyper-parameters, read from the run's gin configuration."""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import gin
import tf_keras
from mlperf_logging.mllog import constants

from models.core import optimization
from models.core.durations import Clock
from models.core.errors import UsageError, check_choice
from models.core.gin_types import check_field_types
from models.core.settings import StepPlan

DIVISIONS = ("closed", "open")
STATUSES = ("cloud", "onprem", "preview", "research")  # training_1.0.0/common.yaml
RESNET_OPTIMIZERS = ("sgd", "lars")  # training_1.0.0/closed_resnet.yaml
# Model Garden's LARS adds no epsilon to its trust ratio (official/modeling/optimization/lars.py).
LARS_EPSILON = 0.0


@gin.configurable("mlperf")
@dataclass
class Submission:
    """The submission keys of every MLPerf log, and which hyper-parameter keys to add.

    submission_org defaults to this codebase (as MLPerf's reference code logs
    'reference_implementation'), submission_platform to the accelerator description.
    caches_cleared: whether the caller cleared the OS file caches before the run, as MLPerf's
    run scripts do (logged as `cache_clear`; this program does not clear them)."""

    submission_org: str = "tpu-pod-zoo"
    submission_platform: str | None = None
    submission_division: str = "open"
    submission_status: str = "research"
    hyperparameters: str | None = None
    caches_cleared: bool = False

    def __post_init__(self):
        check_field_types(self, "mlperf")
        check_choice(self.submission_division, DIVISIONS, "mlperf.submission_division")
        check_choice(self.submission_status, STATUSES, "mlperf.submission_status")
        check_choice(self.hyperparameters, (None, *HYPERPARAMETERS), "mlperf.hyperparameters")
        for name in ("submission_org", "submission_platform"):
            if getattr(self, name) == "":
                raise UsageError(f"mlperf.{name} is empty: name it, or leave the default")

    def keys(self, benchmark: str, accelerator: str) -> dict[str, str]:
        """submission_benchmark, _org, _division, _status and _platform."""
        return {
            constants.SUBMISSION_BENCHMARK: benchmark,
            constants.SUBMISSION_ORG: self.submission_org,
            constants.SUBMISSION_DIVISION: self.submission_division,
            constants.SUBMISSION_STATUS: self.submission_status,
            constants.SUBMISSION_PLATFORM: self.submission_platform or accelerator,
        }


#: Families (and their model prefixes) that are MLPerf training benchmarks: MLPerf's name
#: for the benchmark and the ruleset of MLPerf's compliance checker that has it.
BENCHMARKS = {
    ("resnet", ""): ("resnet", "1.0.0"),
    ("object_detection", "ssd"): ("ssd", "1.0.0"),
    ("mask_rcnn", ""): ("maskrcnn", "1.0.0"),
    ("bert", ""): ("bert", "1.0.0"),
    ("transformer", ""): ("transformer", "0.7.0"),
}


def benchmark(family: str, model: str) -> tuple[str, str | None]:
    """(submission_benchmark, the checker's ruleset for it): MLPerf's name for a benchmark
    MLPerf has, else the family's name and None (its log passes the common rules)."""
    for (name, prefix), found in BENCHMARKS.items():
        if family == name and model.startswith(prefix):
            return found
    return family, None


def eval_accuracy(name: str, target_metric: str | None, metrics: dict[str, float]):
    """eval_accuracy's value in the shape benchmark `name` logs it: Mask R-CNN's
    {"BBOX": box AP, "SEGM": mask AP}, the Transformer's BLEU as a fraction (0.25 for 25),
    else the target metric's value (None when this round did not compute it)."""
    if name == "maskrcnn":
        if "AP" in metrics and "mask_AP" in metrics:
            return {"BBOX": metrics["AP"], "SEGM": metrics["mask_AP"]}
        return None
    value = metrics.get(target_metric or "")
    if name == "transformer" and target_metric == "bleu" and value is not None:
        return value / 100.0
    return value


def epoch_num(clock: Clock, step: int) -> float:
    """MLPerf's epoch_num after `step` steps: epochs done, or samples seen when the dataset's
    size is unknown (as MLPerf's BERT logs)."""
    epoch = clock.epoch(step)
    return epoch if epoch is not None else step * clock.global_batch_size


def bn_span(model: tf_keras.Model, global_batch_size: int, replicas: int) -> int:
    """Examples behind each batch-norm statistic: the global batch when BN is synchronised
    across replicas, else one replica's batch."""
    synchronised = any(getattr(layer, "synchronized", False) for layer in model.submodules)
    return global_batch_size if synchronised else global_batch_size // replicas


def hyperparameters(
    plan: StepPlan, models: dict[str, tf_keras.Model], replicas: int
) -> dict[str, object]:
    """The hyper-parameter keys `mlperf.hyperparameters` names ({} when it names none), for a
    task that trains one model whose optimiser is read in that model's gin scope."""
    name = Submission().hyperparameters
    if name is None:
        return {}
    if len(models) != 1:
        raise UsageError(f"mlperf.hyperparameters='{name}' describes one model, not {len(models)}")
    ((scope, model),) = models.items()
    return HYPERPARAMETERS[name](plan, scope, bn_span(model, plan.global_batch_size, replicas))


def _arguments(configurable) -> dict[str, object]:
    """A configurable function's arguments as gin passes them in the current scope."""
    parameters = inspect.signature(configurable).parameters.values()
    defaults = {p.name: p.default for p in parameters if p.default is not inspect.Parameter.empty}
    return {**defaults, **gin.get_bindings(configurable)}


def resnet(plan: StepPlan, scope: str, span: int) -> dict[str, object]:
    """MLPerf ResNet's closed-division keys (closed_resnet_{sgd,lars}.yaml of training_0.7.0
    and 1.0.0, plus v0.6's opt_base_learning_rate) for the optimiser built in gin `scope`."""
    with gin.config_scope(scope):
        optimizer = optimization.OptimizerSettings()
        rate = optimization.weight_decay_rate()
        lr = _arguments(optimization.learning_rate)
    name, off = optimizer.name, "(or set mlperf.hyperparameters = None)"
    if name not in RESNET_OPTIMIZERS:
        raise UsageError(f"mlperf.hyperparameters='resnet' needs sgd or lars, not '{name}' {off}")
    if lr["decay"] != "poly":
        raise UsageError(
            f"mlperf.hyperparameters='resnet' needs poly decay, not '{lr['decay']}' {off}"
        )
    names = ("base_lr", "base_batch_size", "warmup_steps", "warmup_epochs", "warmup_examples")
    names += ("scaling",)
    peak, warmup = optimization.peak_and_warmup(plan, *(lr[n] for n in names))
    warmup_epochs = plan.epoch(warmup)
    keys = {
        constants.OPT_NAME: name,
        constants.OPT_BASE_LR: peak,
        constants.OPT_LR_WARMUP_EPOCHS: warmup_epochs,
        f"{name}_opt_base_learning_rate": peak,
        f"{name}_opt_end_learning_rate": lr["end_lr"],
        f"{name}_opt_learning_rate_decay_poly_power": lr["poly_power"],
        f"{name}_opt_learning_rate_decay_steps": max(plan.total_steps - warmup, 1),
        f"{name}_opt_weight_decay": rate,
        f"{name}_opt_momentum": optimizer.momentum,
        constants.MODEL_BN_SPAN: span,
    }
    if name == "lars":
        keys[constants.LARS_EPSILON] = LARS_EPSILON
        keys[constants.LARS_OPT_LEARNING_RATE_WARMUP_EPOCHS] = warmup_epochs
    return keys


HYPERPARAMETERS = {"resnet": resnet}
