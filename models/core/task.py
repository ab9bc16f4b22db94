"""The task interface: what a model family trains. Core drives any task the same way.

A task owns its models, inputs, per-replica train/eval steps and metrics. Features and
labels may be dicts; a task may own several models and optimisers (GANs); evaluation
may aggregate outside the graph (COCO mAP, BLEU, WER) through `aggregate_logs` and
`reduce_aggregated_logs`, and may decode sequences inside `validation_step`.
"""

from __future__ import annotations

import abc
from typing import Any

import tensorflow as tf
import tf_keras

Models = dict[str, tf_keras.Model]
Optimizers = dict[str, tf_keras.optimizers.Optimizer]


class Task(abc.ABC):
    """Base class of every model family's task; constructed as `Task(data_dir=..., seed=...)`."""

    #: Eval metric that time-to-accuracy mode targets by default, e.g. "top_1_accuracy".
    primary_metric: str = "accuracy"

    @abc.abstractmethod
    def build_models(self) -> Models:
        """Builds the Keras model(s) under the current strategy scope."""

    @abc.abstractmethod
    def build_optimizers(self, models: Models, schedule_args: dict[str, int]) -> Optimizers:
        """One optimiser per trained model, keyed by that model's name; schedule_args has
        steps_per_epoch, total_steps and global_batch_size."""

    @abc.abstractmethod
    def build_inputs(
        self, split: str, global_batch_size: int, input_context: tf.distribute.InputContext | None
    ) -> tf.data.Dataset:
        """The per-input-pipeline dataset of `split` ('train' or 'validation')."""

    @abc.abstractmethod
    def num_examples(self, split: str) -> int:
        """Examples in one epoch of `split`."""

    def validate_data(self) -> None:  # noqa: B027 - optional hook
        """Checks the data cheaply before anything is trained or written; raises UsageError."""

    def build_metrics(self, training: bool) -> list[tf_keras.metrics.Metric]:
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
        """One per-replica step; returns logs including 'loss' (mean over the local batch)."""

    @abc.abstractmethod
    def validation_step(
        self, inputs: Any, models: Models, metrics: list[tf_keras.metrics.Metric]
    ) -> dict[str, tf.Tensor]:
        """One per-replica eval step; returns tensors for `aggregate_logs` (may be empty)."""

    def aggregate_logs(self, state: Any, step_outputs: dict[str, Any]) -> Any:
        """Accumulates eval outputs outside the graph (numpy values); default keeps nothing."""
        return state

    def reduce_aggregated_logs(self, state: Any) -> dict[str, float]:
        """Final metrics from the accumulated state (COCO mAP, BLEU, ...)."""
        return {}

    def serving_signatures(self, models: Models) -> dict[str, tf.types.experimental.Function]:
        """tf.functions to export as SavedModel signatures; empty means export unsupported."""
        return {}
