"""BERT (Devlin et al. 2019) on Model Garden's encoder and masked-LM head, laid out as Google's
released checkpoints are: the encoder with its pooler, the masked-LM head (transform, layer
norm, output bias; its output weights are the word embeddings) and the next-sentence head (a
2-way dense layer on the pooled output). Registered as Google's sizes (bert_tiny ... bert_large;
the small ones are Turc et al. 2019's miniatures)."""

from __future__ import annotations

import gin
import tensorflow as tf
import tf_keras
from official.nlp.modeling import layers, networks

from models.core.registry import PublishedCount, register_model

ENCODER = "encoder_network"  # the encoder's checkpoint name, shared by every BERT model here
INPUTS = ("input_word_ids", "input_mask", "input_type_ids")
# name: (layers, hidden size); heads of 64 dimensions, feed-forward 4x hidden (Google's rule).
SIZES = {
    "tiny": (2, 128),
    "mini": (4, 256),
    "small": (4, 512),
    "medium": (8, 512),
    "base": (12, 768),
    "large": (24, 1024),
}
_PAPER = "Devlin et al. 2019 (BERT), Section 3 and Google's google-research/bert README"


def _initializer(stddev: float) -> tf_keras.initializers.Initializer:
    return tf_keras.initializers.TruncatedNormal(stddev=stddev)


@gin.configurable
def bert_encoder(
    num_layers: int = 12,
    hidden_size: int = 768,
    vocab_size: int = 30522,
    max_sequence_length: int = 512,
    type_vocab_size: int = 2,
    dropout_rate: float = 0.1,
    attention_dropout_rate: float = 0.1,
    initializer_range: float = 0.02,
) -> tf_keras.Model:
    """Model Garden's BertEncoderV2 at Google's proportions: {input_word_ids, input_mask,
    input_type_ids} -> {sequence_output, pooled_output, ...}, built (its weights exist, so the
    heads can share the embedding table). Defaults: BERT-base, uncased English vocabulary."""
    encoder = networks.BertEncoderV2(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        num_layers=num_layers,
        num_attention_heads=hidden_size // 64,
        inner_dim=4 * hidden_size,
        inner_activation="gelu",
        max_sequence_length=max_sequence_length,
        type_vocab_size=type_vocab_size,
        output_dropout=dropout_rate,
        attention_dropout=attention_dropout_rate,
        initializer=_initializer(initializer_range),
    )
    encoder(dict.fromkeys(INPUTS, tf.zeros([1, 2], tf.int32)))
    return encoder


class BertPretrainer(tf_keras.Model):
    """Encoder plus both pretraining heads: features (the encoder's inputs and
    `masked_lm_positions`) -> {"masked_lm": [batch, predictions, vocab] logits,
    "next_sentence": [batch, 2] logits}."""

    def __init__(self, encoder: tf_keras.Model, initializer_range: float = 0.02, **kwargs):
        super().__init__(**kwargs)
        setattr(self, ENCODER, encoder)
        self.masked_lm = layers.MaskedLM(
            embedding_table=encoder.get_embedding_table(),
            activation="gelu",
            initializer=_initializer(initializer_range),
            name="cls/predictions",
        )
        self.next_sentence = tf_keras.layers.Dense(
            2, kernel_initializer=_initializer(initializer_range), name="cls/seq_relationship"
        )

    @property
    def encoder(self) -> tf_keras.Model:
        return getattr(self, ENCODER)

    def call(self, features: dict[str, tf.Tensor], training=None) -> dict[str, tf.Tensor]:
        outputs = self.encoder({k: features[k] for k in INPUTS}, training=training)
        return {
            "masked_lm": self.masked_lm(
                outputs["sequence_output"], masked_positions=features["masked_lm_positions"]
            ),
            "next_sentence": self.next_sentence(outputs["pooled_output"]),
        }


class BertClassifier(tf_keras.Model):
    """Google's run_classifier head: dropout and a dense layer on the encoder's pooled
    output; features -> [batch, num_classes] logits. The encoder is tracked under the
    pretrainer's name, so `train.init_checkpoint_modules = ("model/encoder_network",)` starts
    it from a pretraining run."""

    def __init__(
        self,
        encoder: tf_keras.Model,
        num_classes: int,
        dropout_rate: float = 0.1,
        initializer_range: float = 0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        setattr(self, ENCODER, encoder)
        self.dropout = tf_keras.layers.Dropout(dropout_rate)
        self.classifier = tf_keras.layers.Dense(
            num_classes, kernel_initializer=_initializer(initializer_range), name="classifier"
        )

    @property
    def encoder(self) -> tf_keras.Model:
        return getattr(self, ENCODER)

    def call(self, features: dict[str, tf.Tensor], training=None) -> tf.Tensor:
        pooled = self.encoder({k: features[k] for k in INPUTS}, training=training)
        return self.classifier(self.dropout(pooled["pooled_output"], training=training))


class BertSpanLabeler(tf_keras.Model):
    """Google's run_squad head: a 2-way dense layer on every token's encoding (Model Garden's
    SpanLabeling); features -> {"start_logits", "end_logits"}, each [batch, seq_length]. The
    encoder is tracked under the pretrainer's name, as in BertClassifier; its pooler, which
    spans do not use, is frozen (kept, so checkpoints keep Google's layout)."""

    def __init__(self, encoder: tf_keras.Model, initializer_range: float = 0.02, **kwargs):
        super().__init__(**kwargs)
        encoder.pooler_layer.trainable = False
        setattr(self, ENCODER, encoder)
        self.span_labeling = networks.SpanLabeling(
            input_width=encoder.get_config()["hidden_size"],
            initializer=_initializer(initializer_range),
        )

    @property
    def encoder(self) -> tf_keras.Model:
        return getattr(self, ENCODER)

    def call(self, features: dict[str, tf.Tensor], training=None) -> dict[str, tf.Tensor]:
        outputs = self.encoder({k: features[k] for k in INPUTS}, training=training)
        start, end = self.span_labeling(outputs["sequence_output"])
        return {"start_logits": start, "end_logits": end}


@gin.configurable
def bert(num_layers: int = 12, hidden_size: int = 768, **encoder_arguments) -> BertPretrainer:
    """BERT with its pretraining heads, built on dummy inputs so that its weights exist (and
    count); `encoder_arguments` go to `bert_encoder` (vocab_size, max_sequence_length, ...)."""
    encoder = bert_encoder(num_layers=num_layers, hidden_size=hidden_size, **encoder_arguments)
    model = BertPretrainer(encoder, encoder_arguments.get("initializer_range", 0.02))
    ids = tf.zeros([1, 2], tf.int32)
    model({**dict.fromkeys(INPUTS, ids), "masked_lm_positions": ids})
    return model


def example_spec(seq_length: int = 128, predictions: int = 20) -> dict[str, tf.TensorSpec]:
    """The pretrainer's input for one pair (batch 1): Google's phase-1 shapes by default."""
    ids = dict.fromkeys(INPUTS, tf.TensorSpec([1, seq_length], tf.int32))
    return {**ids, "masked_lm_positions": tf.TensorSpec([1, predictions], tf.int32)}


# Google's releases hold the encoder (pooler included) and both heads: by our count 110,106,428
# (base) and 336,226,108 (large) at the 30,522-token uncased vocabulary and 512 positions. The
# encoders alone hold exactly the counts of KerasHub's presets of those checkpoints
# (109,482,240; 335,141,888: tests/bert/test_model.py).
PUBLISHED = {
    "base": (PublishedCount("110M", _PAPER),),
    "large": (
        PublishedCount(
            "340M",
            _PAPER,
            disagrees="the paper's 340M rounds up: Google's released BERT-large holds "
            "336,226,108 weights (1.1% fewer; 335,141,888 without the pretraining heads, "
            "KerasHub's exact count of that checkpoint)",
        ),
        PublishedCount("336M", "Hugging Face model card of google-bert/bert-large-uncased"),
    ),
}

for _size, (_layers, _hidden) in SIZES.items():
    register_model(
        f"bert_{_size}",
        "bert",
        f"BERT-{_size} (L={_layers}, H={_hidden}, A={_hidden // 64}) with its pretraining heads",
        task="MaskedLMTask",
        other_tasks=("SentenceClassificationTask", "QuestionAnsweringTask"),
        fixed={"num_layers": _layers, "hidden_size": _hidden},
        published=PUBLISHED.get(_size, ()),
    )(bert)
