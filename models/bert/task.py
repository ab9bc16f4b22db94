"""BERT's tasks: pretraining (masked LM + next-sentence prediction, Model Garden's losses and
MLPerf's masked-LM accuracy) and sentence(-pair) classification fine-tuning; SQuAD's is in
question_answering.py."""

from __future__ import annotations

from collections.abc import Sequence

import gin
import tensorflow as tf
import tf_keras

from models.bert.model import BertClassifier
from models.bert.question_answering import QuestionAnsweringTask  # noqa: F401 - registers it
from models.bert.steps import (
    ACCURACY,
    apply_gradients,
    check_length,
    cross_entropy,
    fine_tuning_model,
)
from models.core import registry
from models.core.task import Models, Task
from models.data.pretraining import PretrainingInput
from models.data.sentence_classification import SentenceClassificationInput
from models.data.text import CLS, MASK, SEP, bert_tokenizer, tokenize_with_masks

TOP_K = 5  # predictions the exported masked LM returns per [MASK]


@gin.configurable
class MaskedLMTask(Task):
    """BERT pretraining on create_pretraining_data.py's records (built-in: python_docs):
    loss = masked-LM cross-entropy averaged over the masked tokens + next-sentence
    cross-entropy; metrics masked_lm_accuracy (MLPerf's) and next_sentence_accuracy.
    `vocab_size` None: the data's."""

    primary_metric = "masked_lm_accuracy"

    def __init__(
        self,
        model: str,
        data_dir: str | None = None,
        seed: int | None = None,
        vocab_size: int | None = None,
    ):
        self.model = model
        self.input = PretrainingInput(data_dir=data_dir)
        self.seed = seed
        self._vocab_size = vocab_size

    @property
    def vocab_size(self) -> int:
        return self._vocab_size or self.input.vocab_size()

    def build_models(self) -> Models:
        model = registry.create_model(self.model, vocab_size=self.vocab_size)
        check_length(model, self.input.seq_length, "pretraining_input")
        return {"model": model}

    def synthetic_inputs(self, global_batch_size, input_context):
        """One batch of random pairs of the input's shapes, repeated (no data read)."""
        batch = input_context.get_per_replica_batch_size(global_batch_size)
        length, predictions = self.input.seq_length, self.input.max_predictions
        seeds = [[self.seed or 0, i] for i in range(4)]

        def uniform(shape, high, seed):
            return tf.random.stateless_uniform(shape, seeds[seed], maxval=high, dtype=tf.int32)

        features = {
            "input_word_ids": uniform([batch, length], self.vocab_size, 0),
            "input_mask": tf.ones([batch, length], tf.int32),
            "input_type_ids": tf.zeros([batch, length], tf.int32),
            "masked_lm_positions": uniform([batch, predictions], length, 1),
            "masked_lm_ids": uniform([batch, predictions], self.vocab_size, 2),
            "masked_lm_weights": tf.ones([batch, predictions], tf.float32),
            "next_sentence_labels": uniform([batch], 2, 3),
        }
        return tf.data.Dataset.from_tensors(features).repeat()

    def build_metrics(self, training: bool, evaluation=None) -> list[tf_keras.metrics.Metric]:
        return [ACCURACY("masked_lm_accuracy"), ACCURACY("next_sentence_accuracy")]

    def losses(self, features, outputs) -> tuple[tf.Tensor, tf.Tensor]:
        """(masked-LM loss: mean over the masked tokens; next-sentence loss: mean over pairs),
        Model Garden's MaskedLMTask losses."""
        weights = tf.cast(features["masked_lm_weights"], tf.float32)
        per_token = cross_entropy(features["masked_lm_ids"], outputs["masked_lm"])
        mlm = tf.reduce_sum(per_token * weights) / (tf.reduce_sum(weights) + 1e-5)
        labels = features["next_sentence_labels"]
        nsp = tf.reduce_mean(cross_entropy(labels, outputs["next_sentence"]))
        return mlm, nsp

    def _update(self, metrics, features, outputs) -> None:
        masked_lm, next_sentence = metrics
        masked_lm.update_state(
            features["masked_lm_ids"],
            tf.cast(outputs["masked_lm"], tf.float32),
            sample_weight=features["masked_lm_weights"],
        )
        labels = features["next_sentence_labels"]
        next_sentence.update_state(
            tf.maximum(labels, 0),
            tf.cast(outputs["next_sentence"], tf.float32),
            sample_weight=tf.cast(labels >= 0, tf.float32),
        )

    def train_step(self, inputs, models, optimizers, metrics, global_batch_size):
        model = models["model"]
        replicas = tf.distribute.get_strategy().num_replicas_in_sync
        with tf.GradientTape() as tape:
            outputs = model(inputs, training=True)
            mlm, nsp = self.losses(inputs, outputs)
            loss = mlm + nsp
            scaled = loss / replicas
        apply_gradients(model, optimizers["model"], tape, scaled)
        self._update(metrics, inputs, outputs)
        return {"loss": loss, "masked_lm_loss": mlm, "next_sentence_loss": nsp}

    def validation_step(self, inputs, models, metrics, evaluation):
        self._update(metrics, inputs, models["model"](inputs, training=False))
        return {}

    def serving_signatures(self, models: Models):
        """Raw text with "[MASK]" in it -> the TOP_K likeliest tokens at each mask (up to
        max_predictions_per_seq), their probabilities, and which slots hold a mask."""
        import tensorflow_text

        model, vocab = models["model"], self.input.vocab()
        lower_case = self.input.dataset_info().get("train_masking", {}).get("do_lower_case", True)
        tokenizer = bert_tokenizer(vocab, lower_case)
        cls_id, sep_id, mask_id = (vocab.index(token) for token in (CLS, SEP, MASK))
        length, slots = self.input.seq_length, self.input.max_predictions
        tokens = tf.constant(vocab)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
        def serve(text):
            ids = tokenize_with_masks(tokenizer, text, mask_id)[:, : length - 2]
            ids, _ = tensorflow_text.combine_segments([ids], cls_id, sep_id)
            word_ids, input_mask = tensorflow_text.pad_model_inputs(ids, length)
            where = tf.broadcast_to(tf.range(length, dtype=word_ids.dtype), tf.shape(word_ids))
            masked = tf.ragged.boolean_mask(where, tf.equal(word_ids, mask_id))[:, :slots]
            positions = masked.to_tensor(default_value=-1, shape=[None, slots])
            features = {
                "input_word_ids": tf.cast(word_ids, tf.int32),
                "input_mask": tf.cast(input_mask, tf.int32),
                "input_type_ids": tf.zeros_like(word_ids, tf.int32),
                "masked_lm_positions": tf.cast(tf.maximum(positions, 0), tf.int32),
            }
            logits = tf.cast(model(features, training=False)["masked_lm"], tf.float32)
            top = tf.math.top_k(tf.nn.softmax(logits), k=TOP_K)
            return {
                "tokens": tf.gather(tokens, top.indices),
                "probabilities": top.values,
                "is_mask": positions >= 0,
            }

        return {"serving_default": serve}


@gin.configurable
class SentenceClassificationTask(Task):
    """Fine-tuning on GLUE-style TSV (built-in: wordnet_glosses): the pretrained encoder and
    Google's classifier head, softmax cross-entropy, accuracy. Start the encoder from a
    pretraining run with `train.init_checkpoint` and `train.init_checkpoint_modules =
    ("model/encoder_network",)`."""

    primary_metric = "accuracy"

    def __init__(
        self,
        model: str,
        data_dir: str | None = None,
        seed: int | None = None,
        dropout_rate: float = 0.1,
    ):
        self.model = model
        self.input = SentenceClassificationInput(data_dir=data_dir)
        self.seed = seed
        self.dropout_rate = dropout_rate

    def build_models(self) -> Models:
        def head(encoder: tf_keras.Model) -> BertClassifier:
            return BertClassifier(encoder, len(self.input.labels()), dropout_rate=self.dropout_rate)

        vocab_size, length = len(self.input.vocab()), self.input.seq_length
        model = fine_tuning_model(self.model, vocab_size, head, length, "sentence_input")
        return {"model": model}

    def validate_data(self, splits: Sequence[str]) -> None:
        self.input.vocab()
        self.input.labels()
        for split in splits:
            self.input.columns(split)

    def build_metrics(self, training: bool, evaluation=None) -> list[tf_keras.metrics.Metric]:
        return [ACCURACY("accuracy")]

    def train_step(self, inputs, models, optimizers, metrics, global_batch_size):
        features, labels = inputs
        model = models["model"]
        with tf.GradientTape() as tape:
            logits = model(features, training=True)
            per_example = cross_entropy(labels, logits)
            loss = tf.reduce_sum(per_example) / global_batch_size
        apply_gradients(model, optimizers["model"], tape, loss)
        metrics[0].update_state(labels, tf.cast(logits, tf.float32))
        return {"loss": tf.reduce_mean(per_example)}

    def serving_signatures(self, models: Models):
        """Raw text (one string tensor per text column) -> class index, label and
        probabilities, tokenised in the graph as in training."""
        model, featurize = models["model"], self.input.featurizer()
        labels = tf.constant(self.input.labels())
        specs = [tf.TensorSpec([None], tf.string, name=name) for name in self.input.text_columns]

        @tf.function(input_signature=specs)
        def serve(*texts):
            logits = tf.cast(model(featurize(list(texts)), training=False), tf.float32)
            classes = tf.argmax(logits, axis=-1, output_type=tf.int32)
            return {
                "classes": classes,
                "labels": tf.gather(labels, classes),
                "probabilities": tf.nn.softmax(logits),
            }

        return {"serving_default": serve}

    def validation_step(self, inputs, models, metrics, evaluation):
        features, labels = inputs
        logits = tf.cast(models["model"](features, training=False), tf.float32)
        valid = tf.cast(labels >= 0, tf.float32)
        metrics[0].update_state(tf.maximum(labels, 0), logits, sample_weight=valid)
        return {}
