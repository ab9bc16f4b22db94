"""The task contract: what a model family trains. Core drives every task the same way.

A task owns its models, inputs, per-replica train and eval steps and metrics:

- `build_models()` returns one or more named Keras models (a GAN: generator, discriminator).
- Core builds one optimiser per trained model, once, from the gin bindings scoped by that
  model's name (`generator/optimizer.name = "adam"`, `discriminator/learning_rate.base_lr`;
  unscoped bindings apply to every model) and passes them to `train_step`.
- `train_step` returns scalars; core averages every one over replicas and the loop's steps
  and reports it (progress line, TensorBoard, run record), with `learning_rate/<model>`.
- `validation_step` may return any nest of tensors, e.g. `{"coco": (groundtruths,
  predictions)}`. Core gathers each leaf over every replica (in replica order, along the
  first axis; a scalar becomes one value per replica) and hands numpy values to
  `aggregate_logs`; `reduce_aggregated_logs` turns the state into metrics (mAP, BLEU, WER).
- Evaluations are named (`train.evaluations`); the steps receive the `EvalPlan` being run
  and branch on its `kind`. Metrics of an evaluation not named `validation` are reported
  as `<name>/<metric>`.
- Before `reduce_aggregated_logs`, core sets `task.eval_run`: the step evaluated and the folder
  where the evaluation may write what a person should read (translations, sample grids), each
  file at `eval_run.path(stem, suffix)`, which never reuses an earlier evaluation's name
  (outputs scored against references: `eval_run.write_scored`, which writes both).
- `lower_is_better` names the metrics whose targets are reached from above (WER, FID).
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import tensorflow as tf
import tf_keras

from models.core import optimization
from models.core.errors import UsageError
from models.core.files import write_atomically
from models.core.settings import EvalPlan, StepPlan

Models = dict[str, tf_keras.Model]
Optimizers = dict[str, tf_keras.optimizers.Optimizer]


@dataclass(frozen=True)
class EvalRun:
    """The evaluation being reduced: the training step it evaluates, the folder for files it
    writes for people to read (model_dir/evaluations/<name>; None on non-chief workers), and
    what runs it: "" inside training, else the mode ("eval", "continuous_eval")."""

    step: int
    directory: str | None
    mode: str = ""
    written: list[str] = field(default_factory=list)

    def path(self, stem: str, suffix: str) -> str:
        """A new file `<stem>-<step>[-<mode>][-<n>]<suffix>` in the folder, never one an
        earlier evaluation wrote (a rerun or an --mode=eval at the same step); noted in
        `written`, which the run record lists."""
        base = f"{self.directory}/{stem}-{self.step}" + (f"-{self.mode}" if self.mode else "")
        path, n = f"{base}{suffix}", 1
        while tf.io.gfile.exists(path):
            n += 1
            path = f"{base}-{n}{suffix}"
        self.written.append(path)
        return path

    def write_scored(self, stem: str, suffix: str, outputs: str, reference: str) -> str | None:
        """An evaluation's outputs at path(stem, suffix), and the reference they were scored
        against at `<stem>-reference<suffix>`, written once; where that file holds another
        reference (the same split of other data: another --data_dir), at `<the outputs'
        name>-reference<suffix>` instead. The outputs' path (None on non-chief workers)."""
        if self.directory is None:
            return None
        tf.io.gfile.makedirs(self.directory)
        path, shared = self.path(stem, suffix), f"{self.directory}/{stem}-reference{suffix}"
        if not tf.io.gfile.exists(shared):
            write_atomically(shared, reference)
        elif _read(shared) != reference:
            write_atomically(f"{path.removesuffix(suffix)}-reference{suffix}", reference)
        write_atomically(path, outputs)
        return path


def _read(path: str) -> str:
    with tf.io.gfile.GFile(path) as file:
        return file.read()


class InputSource(Protocol):
    """What a task reads: one of models/data's input pipelines, as core's Task delegates to it."""

    def dataset(
        self,
        split: str,
        global_batch_size: int,
        input_context: tf.distribute.InputContext | None,
        seed: int | None,
    ) -> tf.data.Dataset: ...

    def num_examples(self, split: str) -> int | None: ...

    def validate(self, splits: Sequence[str]) -> None: ...


class Task(abc.ABC):
    """Base class of every family's task; core calls `Task(model=..., data_dir=..., seed=...)`
    with the recipe's `run.model` (a registered variant name). A task that reads data sets
    `input` (and `seed`): building, counting, checking and locating a damaged shard of its
    input then need no code of its own."""

    #: Eval metric that time-to-accuracy mode targets by default, e.g. "top_1_accuracy".
    primary_metric: str = "accuracy"
    #: Metrics (last name part) where lower is better; every other metric: higher is better.
    lower_is_better: frozenset[str] = frozenset({"loss"})
    #: (low, high) of metrics whose last name part ends with the key; a target outside it can
    #: never be reached (accuracies, F1, mAP are fractions here, not percentages).
    metric_ranges: dict[str, tuple[float, float]] = {"accuracy": (0.0, 1.0)}
    #: Set by core before each `reduce_aggregated_logs`.
    eval_run: EvalRun | None = None
    #: The input pipeline the task reads (an InputSource); None for a task that reads none.
    input: InputSource | None = None
    #: The run's seed: input order and augmentation (None: nondeterministic order).
    seed: int | None = None

    @abc.abstractmethod
    def build_models(self) -> Models:
        """Builds the Keras model(s) under the current strategy scope."""

    def build_optimizers(self, models: Models, plan: StepPlan) -> Optimizers:
        """One optimiser per trained model, from gin bindings scoped by the model's name.
        Override to train fewer models than are built (a frozen feature extractor)."""
        return optimization.build_optimizers(list(models), plan)

    def build_inputs(
        self, split: str, global_batch_size: int, input_context: tf.distribute.InputContext | None
    ) -> tf.data.Dataset:
        """The dataset of one input pipeline for `split` ('train', 'validation', ...)."""
        return self._input().dataset(split, global_batch_size, input_context, seed=self.seed)

    def synthetic_inputs(
        self, global_batch_size: int, input_context: tf.distribute.InputContext | None
    ) -> tf.data.Dataset:
        """Training input without reading data, for throughput (`train.synthetic_input`):
        by default one real batch, repeated (cached: a reshuffling pipeline would otherwise
        give another first batch each pass); tasks whose data may be absent override it."""
        batch = self.build_inputs("train", global_batch_size, input_context).take(1)
        return batch.cache().repeat()

    def num_examples(self, split: str) -> int | None:
        """Examples in one epoch of `split`; None when unknown (the recipe trains by steps
        and evaluation reads the split until it ends)."""
        return self._input().num_examples(split)

    def validate_data(self, splits: Sequence[str]) -> None:
        """Checks the splits a run reads cheaply, before anything is trained or written;
        raises UsageError."""
        if self.input is not None:
            self.input.validate(splits=splits)

    def damaged_shard(self) -> str | None:
        """'<shard>: where it is cut short' for the input's first truncated shard, else None
        (asked after a DataLossError: TensorFlow's names a byte offset alone)."""
        find = getattr(self.input, "damaged_shard", None)
        return find() if find is not None else None

    def _input(self) -> InputSource:
        if self.input is None:
            raise NotImplementedError(f"{type(self).__name__} sets no `input`: override this")
        return self.input

    def build_metrics(
        self, training: bool, evaluation: EvalPlan | None = None
    ) -> list[tf_keras.metrics.Metric]:
        """Keras metrics updated inside the steps (created under the strategy scope)."""
        return []

    @abc.abstractmethod
    def train_step(
        self,
        inputs: Any,
        models: Models,
        optimizers: Optimizers,
        metrics: list[tf_keras.metrics.Metric],
        global_batch_size: int,
    ) -> dict[str, tf.Tensor]:
        """One per-replica step; returns scalars, e.g. {'loss': ..., 'generator_loss': ...}."""

    @abc.abstractmethod
    def validation_step(
        self,
        inputs: Any,
        models: Models,
        metrics: list[tf_keras.metrics.Metric],
        evaluation: EvalPlan,
    ) -> Any:
        """One per-replica eval step; returns a nest of tensors for `aggregate_logs`."""

    def aggregate_logs(self, state: Any, step_outputs: Any, evaluation: EvalPlan) -> Any:
        """Accumulates one eval step's gathered outputs (numpy) outside the graph."""
        return state

    def reduce_aggregated_logs(self, state: Any, evaluation: EvalPlan) -> dict[str, float]:
        """Final metrics from the accumulated state (COCO mAP, BLEU, WER, ...)."""
        return {}

    def is_lower_better(self, metric: str) -> bool:
        """Whether `metric` (bare or `<evaluation>/<metric>`) improves downwards."""
        return metric.rsplit("/", 1)[-1] in self.lower_is_better

    def metric_range(self, metric: str) -> tuple[float, float] | None:
        """The values `metric` can take, when the task knows them."""
        name = metric.rsplit("/", 1)[-1]
        return next((r for end, r in self.metric_ranges.items() if name.endswith(end)), None)

    def metric_text(self, metric: str, value: float, spec: str = ".4f") -> str:
        """`value` as the console shows it: "n/a" for a sentinel outside the metric's range
        (COCO's -1 for APm when a split has no medium objects), else format(value, spec)."""
        bounds = self.metric_range(metric)
        if bounds is not None and not bounds[0] <= value <= bounds[1]:
            return "n/a"
        return format(value, spec)

    def draw_prediction(self, models: Models, image_bytes: bytes) -> tuple[tf.Tensor, str]:
        """(the image with the model's prediction drawn on it, uint8 [H, W, 3]; a one-line
        summary) for `--mode=predict`; tasks that can show a prediction override it."""
        raise UsageError(f"--mode=predict: {type(self).__name__} does not draw predictions")

    def draw_samples(self, models: Models, count: int) -> tuple[Any, str]:
        """(uint8 [H, W, 3] grid of `count` samples; a one-line summary) for `--mode=predict
        --num_images`; generative tasks override it."""
        raise UsageError(f"--mode=predict: {type(self).__name__} does not generate images")

    def predict_lines(self, models: Models, lines: list[str]) -> list[str]:
        """One prediction a line for `--mode=predict --input=FILE` (a translation); tasks that
        read text override it."""
        raise UsageError(f"--mode=predict: {type(self).__name__} does not read --input text")

    def transcribe_audio(self, models: Models, wav: bytes, name: str) -> str:
        """The transcript of one WAV file's bytes for `--mode=predict --audio=FILE` (`name`:
        the file, for error lines); speech tasks override it."""
        raise UsageError(f"--mode=predict: {type(self).__name__} does not read --audio")

    def serving_signatures(self, models: Models) -> dict[str, tf.types.experimental.Function]:
        """tf.functions to export as SavedModel signatures; empty means export unsupported."""
        return {}
