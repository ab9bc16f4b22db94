"""BERT's tasks: the metrics' weighting, the pretraining checkpoint's encoder in the fine-tuning
model, one-line errors for inputs the model cannot take."""

from __future__ import annotations

import gin
import numpy as np
import pytest
import tensorflow as tf

from models.bert.model import BertClassifier
from models.bert.task import MaskedLMTask
from models.core import registry
from models.core.errors import UsageError
from models.core.init_checkpoint import restore_init_checkpoint

SMALL = {"vocab_size": 50, "max_sequence_length": 16}


def test_metrics_count_masked_tokens_and_real_pairs_only():
    """Padding slots (weight 0) and padding pairs (label -1) are not scored."""
    task = MaskedLMTask(model="bert_tiny", vocab_size=5)
    metrics = task.build_metrics(training=False)
    features = {
        "masked_lm_ids": tf.constant([[1, 2, 0], [3, 0, 0]]),
        "masked_lm_weights": tf.constant([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]]),
        "next_sentence_labels": tf.constant([1, -1]),
    }
    predicted = tf.constant([[1, 4, 0], [3, 3, 3]])  # 2 of 3 masked tokens right
    outputs = {
        "masked_lm": tf.one_hot(predicted, 5),
        "next_sentence": tf.one_hot([1, 0], 2),  # the padding pair's answer is wrong
    }
    task._update(metrics, features, outputs)  # noqa: SLF001 - the steps' one update
    assert [float(m.result()) for m in metrics] == pytest.approx([2 / 3, 1.0])


def test_losses_average_over_masked_tokens():
    task = MaskedLMTask(model="bert_tiny", vocab_size=4)
    features = {
        "masked_lm_ids": tf.constant([[0, 1], [2, 3]]),
        "masked_lm_weights": tf.constant([[1.0, 0.0], [1.0, 1.0]]),
        "next_sentence_labels": tf.constant([0, 1]),
    }
    probabilities = tf.constant([[[0.5, 0.5, 0, 0], [1, 0, 0, 0]], [[0, 0, 1, 0], [0.25] * 4]])
    logits = tf.math.log(probabilities + 1e-12)  # the unscored slot's loss is large, not inf
    outputs = {"masked_lm": logits, "next_sentence": tf.zeros([2, 2])}
    mlm, nsp = task.losses(features, outputs)
    expected = -(np.log(0.5) + np.log(1.0) + np.log(0.25)) / 3
    assert float(mlm) == pytest.approx(expected, rel=1e-4)
    assert float(nsp) == pytest.approx(np.log(2.0), rel=1e-5)


def test_fine_tuning_starts_from_the_pretraining_checkpoints_encoder(tmp_path):
    pretrainer = registry.create_model("bert_tiny", **SMALL)
    prefix = tf.train.Checkpoint(model=pretrainer).save(str(tmp_path / "ckpt"))
    classifier = BertClassifier(registry.create_model("bert_tiny", **SMALL).encoder, 3)
    summary = restore_init_checkpoint(prefix, ["model/encoder_network"], {"model": classifier})
    assert "model/encoder_network" in summary
    ours, theirs = classifier.encoder.get_weights(), pretrainer.encoder.get_weights()
    assert len(ours) == len(theirs) > 30
    for mine, pretrained in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(mine, pretrained)


def test_sequences_longer_than_the_model_are_one_line():
    gin.parse_config(["pretraining_input.seq_length = 1024"])
    task = MaskedLMTask(model="bert_tiny", vocab_size=50)
    with pytest.raises(UsageError, match="seq_length = 1024 is longer than the model's 512"):
        task.build_models()


def test_synthetic_pairs_train_without_data():
    gin.parse_config(
        ["pretraining_input.seq_length = 16", "pretraining_input.max_predictions_per_seq = 3"]
    )
    task = MaskedLMTask(model="bert_tiny", vocab_size=50, data_dir="/nonexistent")
    context = tf.distribute.InputContext()
    batch = next(iter(task.synthetic_inputs(4, context)))
    assert batch["input_word_ids"].shape == (4, 16)
    assert batch["masked_lm_positions"].shape == (4, 3)
    assert int(tf.reduce_max(batch["input_word_ids"])) < 50
