"""The BERT anchor: Model Garden's own bert/pretraining experiment (its MaskedLMTask,
BertPretrainerV2 and Trainer) at our encoder's sizes and sequence shapes, fed the same synthetic
pairs. Its next-sentence head holds a second pooler (hidden x hidden + hidden weights) that
Google's layout, ours, does not: its parameter count is that much higher."""

from __future__ import annotations

import tensorflow as tf
from official.core import exp_factory
from official.nlp.configs import pretraining_experiments as _configs  # noqa: F401 - registers

from benchmarks.recipes import Recipe
from benchmarks.throughput import measure
from benchmarks.throughput.anchors import EXPERIMENTS
from benchmarks.throughput.anchors.model_garden import gpus_in, time_on_our_input
from models.bert.task import MaskedLMTask
from models.core.task import Task
from models.core.trainer import Trainer

FAMILY = "bert"
EXPERIMENT = EXPERIMENTS[FAMILY]
NOMINAL_STEPS = 1000
# Our encoder's get_config() names -> Model Garden's BertEncoderConfig names.
ENCODER_NAMES = {
    "vocab_size": "vocab_size",
    "hidden_size": "hidden_size",
    "num_layers": "num_layers",
    "num_attention_heads": "num_attention_heads",
    "inner_dim": "intermediate_size",
    "max_sequence_length": "max_position_embeddings",
    "type_vocab_size": "type_vocab_size",
    "output_dropout": "dropout_rate",
    "attention_dropout": "attention_dropout_rate",
}


def supports(recipe: Recipe, task: Task) -> bool:
    """Whether the anchor can train what the recipe trains: BERT pretraining."""
    return recipe.family == FAMILY and isinstance(task, MaskedLMTask)


def matched_settings(trainer: Trainer) -> dict:
    """What the anchor must match of ours: the encoder's sizes and the pairs' shapes."""
    encoder = trainer.models["model"].encoder.get_config()
    task = trainer.task
    return {
        "encoder": {theirs: encoder[ours] for ours, theirs in ENCODER_NAMES.items()},
        "seq_length": task.input.seq_length,
        "max_predictions_per_seq": task.input.max_predictions,
    }


def anchor_config(ours: dict, batch: int, precision: str, num_gpus: int = 0):
    """bert/pretraining with our encoder, pair shapes, batch and precision (its AdamW, as our
    recipes'); no init checkpoint."""
    config = exp_factory.get_exp_config(EXPERIMENT)
    encoder = {**ours["encoder"], "hidden_activation": "gelu"}
    hidden = encoder["hidden_size"]
    head = {"inner_dim": hidden, "num_classes": 2, "dropout_rate": 0.1, "name": "next_sentence"}
    model = {"encoder": {"type": "bert", "bert": encoder}, "cls_heads": [head]}
    data = {
        "global_batch_size": batch,
        "seq_length": ours["seq_length"],
        "max_predictions_per_seq": ours["max_predictions_per_seq"],
    }
    task = {"model": model, "train_data": data, "init_checkpoint": ""}
    runtime = {"mixed_precision_dtype": precision, "num_gpus": num_gpus}
    # Its schedule's lengths are left for the user; any fixed ones time the same.
    schedule = {
        "learning_rate": {"polynomial": {"decay_steps": NOMINAL_STEPS}},
        "warmup": {"polynomial": {"warmup_steps": NOMINAL_STEPS // 10}},
    }
    trainer = {"train_steps": NOMINAL_STEPS, "optimizer_config": schedule}
    config.override({"runtime": runtime, "task": task, "trainer": trainer}, is_strict=True)
    return config


def measure_anchor(
    ours: Trainer, precision: str, strategy: tf.distribute.Strategy, warmup_steps: int, steps: int
) -> dict:
    """examples (sequences)/s, ms/step and params of Model Garden's BERT pretraining step."""
    matched = matched_settings(ours)
    config = anchor_config(matched, ours.global_batch_size, precision, gpus_in(strategy))
    trainer, seconds = time_on_our_input(config, ours, strategy, warmup_steps, steps)
    pair = ours.task.synthetic_inputs(1, tf.distribute.InputContext()).element_spec
    return {
        "name": f"Model Garden: exp_factory '{EXPERIMENT}', official.core.base_trainer.Trainer",
        **measure.rates(seconds, steps, ours.global_batch_size),
        "params": int(trainer.model.count_params()),
        "flops_per_example": measure.training_flops_per_example(trainer.model, pair),
        "xla": bool(config.runtime.enable_xla and config.runtime.num_gpus > 0),
        "optimizer": measure.class_name(trainer.optimizer),
        "matched": matched,
    }
