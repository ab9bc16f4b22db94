"""The Transformer anchor: Model Garden's own translation experiment (wmt_transformer/large: its
TranslationTask, Seq2SeqTransformer and Trainer) at our model's sizes, label smoothing and
token batch, fed the same synthetic batches, so both sides count the same examples and tokens
(the command's tokens/s: padded tokens a side). Its task reads its vocabulary size from a
SentencePiece model: it is given our data's (it tokenises nothing here). It keeps its own
optimizer class (the legacy Keras Adam; ours: the Keras Adam) and schedule (rsqrt after a
linear warm-up, as ours), given our Adam's betas and epsilon; its decoding settings (unused in
training) stay the experiment's."""

from __future__ import annotations

import os

import tensorflow as tf
from official.core import exp_factory
from official.nlp.configs import wmt_transformer_experiments as _configs  # noqa: F401 - registers
from official.nlp.tasks import translation

from benchmarks.recipes import Recipe
from benchmarks.throughput import measure, ours
from benchmarks.throughput.anchors import EXPERIMENTS
from benchmarks.throughput.anchors.model_garden import gpus_in, time_on_our_input
from models.core.errors import UsageError
from models.core.task import Task
from models.core.trainer import Trainer
from models.data.convert.parallel_text import (
    MODEL_FILE,
    check_sentencepiece,
    read_sentencepiece,
)
from models.transformer.task import TranslationTask

FAMILY = "transformer"
EXPERIMENT = EXPERIMENTS[FAMILY]
# Model Garden's EncDecoder fields: also the keys of its TransformerEncoder's and
# TransformerDecoder's get_config(), which our model's stacks are.
STACK_FIELDS = tuple(translation.EncDecoder().as_dict())
ADAM_FIELDS = ("beta_1", "beta_2", "epsilon")


def supports(recipe: Recipe, task: Task) -> bool:
    """Whether the anchor can train what the recipe trains: translation."""
    return recipe.family == FAMILY and isinstance(task, TranslationTask)


def _adam(trainer: Trainer) -> dict:
    """Our Adam's betas and epsilon (none for another optimizer: the experiment's stay)."""
    optimizer = trainer.optimizers["model"]
    optimizer = getattr(optimizer, "inner_optimizer", optimizer)  # a loss-scale wrapper
    if type(optimizer).__name__ != "Adam":
        return {}
    config = optimizer.get_config()
    return {name: float(config[name]) for name in ADAM_FIELDS}


def batch_shape(task: TranslationTask, global_batch_size: int, replicas: int) -> list[int]:
    """[rows, length] of a replica's synthetic batch."""
    context = tf.distribute.InputContext(num_replicas_in_sync=replicas)
    spec = task.synthetic_inputs(global_batch_size, context).element_spec
    return spec["targets"].shape.as_list()


def matched_settings(trainer: Trainer) -> dict:
    """What the anchor must match of ours: the stacks' sizes, width, vocabulary, dropout,
    label smoothing, the token batch and our Adam's settings."""
    model = trainer.models["model"]
    config = model.get_config()
    task = trainer.task
    stacks = {
        side: {name: layer.get_config()[name] for name in STACK_FIELDS}
        for side, layer in (("encoder", model.encoder_layer), ("decoder", model.decoder_layer))
    }
    replicas = trainer.strategy.num_replicas_in_sync
    rows, length = batch_shape(task, trainer.global_batch_size, replicas)
    return {
        **stacks,
        "embedding_width": config["hidden_size"],
        "dropout_rate": config["dropout_rate"],
        "vocab_size": config["vocab_size"],
        "label_smoothing": task.label_smoothing,
        "max_length": task.input.max_length,
        "replica_batch_rows": rows,
        "tokens_per_batch": replicas * rows * length,
        "adam": _adam(trainer),
    }


def check_vocabulary(matched: dict, sentencepiece_path: str) -> None:
    """UsageError when Model Garden's task cannot be given our vocabulary: it reads its size
    from the SentencePiece model."""
    pieces = check_sentencepiece(read_sentencepiece(sentencepiece_path), sentencepiece_path)
    if pieces.vocab_size != matched["vocab_size"]:
        raise UsageError(
            f"our model's vocabulary is {matched['vocab_size']} tokens but Model Garden's "
            f"translation task takes {pieces.vocab_size} from {sentencepiece_path}: leave "
            "TranslationTask.vocab_size unset to compare with it"
        )


def anchor_config(ours_matched: dict, precision: str, sentencepiece_path: str, num_gpus: int = 0):
    """wmt_transformer/large at our sizes, token batch and precision, given our data's
    SentencePiece model; no validation data (its task would write test records)."""
    config = exp_factory.get_exp_config(EXPERIMENT)
    model = {
        "encoder": ours_matched["encoder"],
        "decoder": ours_matched["decoder"],
        "embedding_width": ours_matched["embedding_width"],
        "dropout_rate": ours_matched["dropout_rate"],
        "label_smoothing": ours_matched["label_smoothing"],
    }
    # Its data's global batch counts tokens (static batches of max_seq_length); ours is fed.
    tokens = ours_matched["tokens_per_batch"]
    data = {"global_batch_size": tokens, "max_seq_length": ours_matched["max_length"]}
    no_data = {"tfds_name": "", "input_path": ""}
    task = {
        "model": model,
        "train_data": data,
        "validation_data": no_data,
        "sentencepiece_model_path": sentencepiece_path,
        "init_checkpoint": "",
    }
    runtime = {"mixed_precision_dtype": precision, "num_gpus": num_gpus}
    trainer = {}
    if ours_matched["adam"]:
        trainer = {"optimizer_config": {"optimizer": {"adam": ours_matched["adam"]}}}
    config.override({"runtime": runtime, "task": task, "trainer": trainer}, is_strict=True)
    return config


def measure_anchor(
    ours_trainer: Trainer,
    precision: str,
    strategy: tf.distribute.Strategy,
    warmup_steps: int,
    steps: int,
) -> dict:
    """examples/s (as our global batch counts them), ms/step, params and FLOPs/example of
    Model Garden's translation step on our synthetic batches."""
    matched = matched_settings(ours_trainer)
    batch = ours_trainer.global_batch_size
    sentencepiece_path = os.path.join(ours_trainer.task.input.data_dir, MODEL_FILE)
    check_vocabulary(matched, sentencepiece_path)
    config = anchor_config(matched, precision, sentencepiece_path, gpus_in(strategy))
    trainer, seconds = time_on_our_input(config, ours_trainer, strategy, warmup_steps, steps)
    models = {"model": trainer.model}
    return {
        "name": f"Model Garden: exp_factory '{EXPERIMENT}', official.core.base_trainer.Trainer",
        **measure.rates(seconds, steps, batch),
        "params": int(trainer.model.count_params()),
        "flops_per_example": ours.flops_per_example(models, ours_trainer.task),
        "xla": bool(config.runtime.enable_xla and config.runtime.num_gpus > 0),
        "optimizer": measure.class_name(trainer.optimizer),
        "matched": matched,
    }
