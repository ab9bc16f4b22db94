"""The Transformer (Vaswani et al. 2017) on Model Garden's Seq2SeqTransformer: one embedding
table shared by the source, the target and the output softmax (the paper's shared BPE
vocabulary), sinusoidal positions, pre-layer-norm blocks without attention biases (Model
Garden's and Tensor2Tensor's layout), and beam search or greedy decoding. Registered as
transformer_tiny (the built-in recipe's), transformer_base and transformer_big.

Parameters (no position weights; attention without biases):
    V*d + L*(4d^2 + 2df + f + 5d)      (encoder: attention, feed-forward, two layer norms)
        + L*(8d^2 + 2df + f + 7d)      (decoder: two attentions, feed-forward, three norms)
        + 4d                           (the final layer norm of each stack)
with vocabulary V, width d, feed-forward width f and L layers a stack. At the paper's 37,000
shared tokens: base 63,047,680 (L 6, d 512, f 2048), big 214,175,744 (d 1024, f 4096)."""

from __future__ import annotations

import gin
import tensorflow as tf
from official.nlp.modeling import models

from models.core.registry import PublishedCount, register_model

EOS_ID = 1  # the converter's SentencePiece models: pad 0, end of sequence 1
PAPER_VOCAB = 37000  # the paper's shared byte-pair vocabulary, WMT 2014 English-German
# name: (layers a stack, width, feed-forward width, heads, dropout): the paper's Table 3.
SIZES = {
    "tiny": (2, 128, 512, 4, 0.1),
    "base": (6, 512, 2048, 8, 0.1),
    "big": (6, 1024, 4096, 16, 0.3),
}
_PAPER = "Vaswani et al. 2017 (Attention Is All You Need), Table 3"


def parameter_count(vocab_size: int, layers: int, width: int, inner: int) -> int:
    """The module docstring's formula: the weights of a variant at a vocabulary size."""
    encoder = 4 * width**2 + 2 * width * inner + inner + 5 * width
    decoder = 8 * width**2 + 2 * width * inner + inner + 7 * width
    return vocab_size * width + layers * (encoder + decoder) + 4 * width


class Transformer(models.Seq2SeqTransformer):
    """Seq2SeqTransformer whose decoding width can be chosen per call: {"inputs", "targets"}
    -> [batch, target length, vocab] logits (teacher forcing); `translate(inputs,
    beam_size, alpha)` -> {"outputs": [batch, length] ids, "scores": [batch]}."""

    def translate(self, inputs: tf.Tensor, beam_size: int, alpha: float) -> dict[str, tf.Tensor]:
        """Beam search of `beam_size` beams with length penalty `alpha`; 1 beam is greedy
        decoding. Decodes up to the source length + `extra_decode_length` tokens."""
        chosen = self._beam_size, self._alpha
        self._beam_size, self._alpha = beam_size, alpha  # read when call() traces the search
        try:
            return self({"inputs": inputs}, training=False)
        finally:
            self._beam_size, self._alpha = chosen


@gin.configurable
def transformer(
    num_layers: int = 6,
    hidden_size: int = 512,
    inner_size: int = 2048,
    num_heads: int = 8,
    dropout_rate: float = 0.1,
    vocab_size: int = PAPER_VOCAB,
    extra_decode_length: int = 50,
    beam_size: int = 4,
    alpha: float = 0.6,
) -> Transformer:
    """The Transformer at the given sizes (defaults: base at the paper's vocabulary), built so
    that its weights exist (and count). Dropout applies to embeddings, attention weights,
    sub-layer outputs and the feed-forward's inner activations, as Model Garden's
    translation task sets it. `extra_decode_length`: tokens a translation may run past its
    source (Tensor2Tensor's 50)."""

    def stack(kind):
        return kind(
            num_layers=num_layers,
            num_attention_heads=num_heads,
            intermediate_size=inner_size,
            dropout_rate=dropout_rate,
            attention_dropout_rate=dropout_rate,
            intermediate_dropout=dropout_rate,
        )

    model = Transformer(
        vocab_size=vocab_size,
        embedding_width=hidden_size,
        dropout_rate=dropout_rate,
        extra_decode_length=extra_decode_length,
        beam_size=beam_size,
        alpha=alpha,
        encoder_layer=stack(models.TransformerEncoder),
        decoder_layer=stack(models.TransformerDecoder),
        eos_id=EOS_ID,
    )
    ids = tf.ones([1, 2], tf.int32)
    model({"inputs": ids, "targets": ids}, training=False)
    return model


def example_spec(length: int = 64) -> dict[str, tf.TensorSpec]:
    """One sentence pair of `length` tokens a side (batch 1), for FLOPs counts."""
    return dict.fromkeys(("inputs", "targets"), tf.TensorSpec([1, length], tf.int32))


PUBLISHED = {
    "base": (
        PublishedCount(
            "65M",
            _PAPER,
            disagrees="at the paper's 37,000 shared tokens the base layout holds 63,047,680 "
            "weights (3.0% under 65M; the module's formula); no shared-vocabulary layout of "
            "these sizes reaches 65M",
        ),
    ),
    "big": (
        PublishedCount(
            "213M",
            _PAPER,
            disagrees="at the paper's 37,000 shared tokens the big layout holds 214,175,744 "
            "weights (0.55% over 213M; the module's formula)",
        ),
    ),
}

for _size, (_layers, _width, _inner, _heads, _dropout) in SIZES.items():
    register_model(
        f"transformer_{_size}",
        "transformer",
        f"Transformer-{_size} (L={_layers}, d={_width}, f={_inner}, h={_heads}), shared embeddings",
        task="TranslationTask",
        fixed={
            "num_layers": _layers,
            "hidden_size": _width,
            "inner_size": _inner,
            "num_heads": _heads,
        },
        defaults={"dropout_rate": _dropout},
        published=PUBLISHED.get(_size, ()),
    )(transformer)
