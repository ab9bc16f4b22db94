"""The ASR Transformer (Dong et al. 2018's Speech-Transformer; Tensor2Tensor's
`transformer_librispeech`, which the Cloud TPU tutorial trained on LibriSpeech): log-mel frames
through a convolutional front end that keeps a quarter of them, a Transformer encoder, and a
Transformer decoder with cross-attention that spells the transcript, on Model Garden's
Seq2SeqTransformer (pre-layer-norm blocks without attention biases, sinusoidal positions, the
target embedding shared with the output softmax, beam search with length normalisation). An
optional CTC head on the encoder (Watanabe et al. 2017's joint CTC-attention) helps the
attention learn to align. Registered as asr_transformer_small (the built-in recipe's) and
asr_transformer_t2t_v1 / _v2 (the sizes of Tensor2Tensor's `transformer_librispeech_v1` / `_v2`,
the latter its `transformer_librispeech`; Lingvo's open-source LibriSpeech recipes are LAS,
recurrent, with no Transformer to size).

Parameters, with F mel bins, C front-end channels, width d, feed-forward width f, E encoder and
D decoder layers and V target tokens:
    front end    9C + C + 9C^2 + C + ceil(F/4) C d + d     (two 3x3 convolutions, projection)
    encoder      E (4d^2 + 2df + f + 5d) + 2d
    decoder      D (8d^2 + 2df + f + 7d) + 2d + V d        (V d: the shared embedding)
    CTC head     d V + V                                   (only with ctc_head)"""

from __future__ import annotations

import gin
import tensorflow as tf
import tf_keras
from official.nlp.modeling import models

from models.core.registry import register_model

EOS_ID = 1  # models.data.transcripts: pad 0, end of sequence 1
NUM_MEL_BINS = 80
SUBSAMPLING = 4  # two convolutions of stride 2 in time (and in frequency)


def subsampled_length(frames: tf.Tensor) -> tf.Tensor:
    """Frames left of `frames` after the front end ("same" padding, stride 2, twice)."""
    once = (frames + 1) // 2
    return (once + 1) // 2


def parameter_count(
    vocab_size: int,
    encoder_layers: int,
    decoder_layers: int,
    width: int,
    inner: int,
    channels: int,
    mel_bins: int = NUM_MEL_BINS,
    ctc_head: bool = False,
) -> int:
    """The module docstring's formula: the weights of a variant."""
    front = 10 * channels + 9 * channels**2 + channels
    front += -(-mel_bins // SUBSAMPLING) * channels * width + width
    encoder = encoder_layers * (4 * width**2 + 2 * width * inner + inner + 5 * width) + 2 * width
    decoder = decoder_layers * (8 * width**2 + 2 * width * inner + inner + 7 * width)
    decoder += 2 * width + vocab_size * width
    ctc = (width + 1) * vocab_size if ctc_head else 0
    return front + encoder + decoder + ctc


class FrontEnd(tf_keras.layers.Layer):
    """Two 3x3 convolutions of stride 2 with ReLU (a quarter of the frames and of the mel
    bins), then a projection to the model's width: ([B, T, F] features, [B, T] mask) ->
    ([B, ceil(T/4), d] frames, [B, ceil(T/4)] bool mask), the same for a clip whatever T its
    batch pads it to."""

    def __init__(self, channels: int, width: int, **kwargs):
        super().__init__(**kwargs)
        self.convolutions = [
            tf_keras.layers.Conv2D(channels, 3, strides=2, padding="same", activation="relu")
            for _ in range(2)
        ]
        self.projection = tf_keras.layers.Dense(width)

    def call(self, features: tf.Tensor, mask: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        # "same" padding of stride 2 starts its windows a frame earlier on an odd length: padded
        # to a multiple of 4 frames, a clip's outputs do not depend on how long its batch is
        extra = -tf.shape(features)[1] % SUBSAMPLING
        features = tf.pad(features, [[0, 0], [0, extra], [0, 0]])
        mask = tf.pad(mask, [[0, 0], [0, extra]])
        x = features[..., tf.newaxis] * tf.cast(mask, features.dtype)[:, :, tf.newaxis, tf.newaxis]
        for convolution in self.convolutions:
            x = convolution(x)
        shape = tf.shape(x)
        x = tf.reshape(x, [shape[0], shape[1], x.shape[2] * x.shape[3]])
        lengths = subsampled_length(tf.reduce_sum(tf.cast(mask, tf.int32), axis=1))
        kept = tf.sequence_mask(lengths, shape[1])
        return self.projection(x), kept


class ASRTransformer(models.Seq2SeqTransformer):
    """{"features": [B, T, F], "feature_mask": [B, T], "targets": [B, L]} -> {"logits": [B, L,
    V] (teacher forcing), and with a CTC head "ctc_logits": [B, T/4, V], "ctc_mask": [B, T/4]};
    `transcribe(features, feature_mask, beam_size, alpha)` -> {"outputs": [B, length] ids,
    "scores": [B]} (1 beam: greedy)."""

    def __init__(self, front_end: FrontEnd, ctc_head: bool = False, **kwargs):
        super().__init__(**kwargs)
        self.front_end = front_end
        self.ctc_projection = tf_keras.layers.Dense(self._vocab_size) if ctc_head else None

    def call(self, inputs: dict[str, tf.Tensor]):  # noqa: D102 - the class docstring
        frames, mask = self.front_end(inputs["features"], inputs["feature_mask"])
        if "targets" not in inputs:  # Model Garden's own encoding and beam search
            return super().call({"embedded_inputs": frames, "input_masks": mask})
        encoded = self.encode(frames, mask)
        outputs = {"logits": self.decode(encoded, mask, inputs["targets"])}
        if self.ctc_projection is not None:
            outputs["ctc_logits"] = tf.cast(self.ctc_projection(encoded), tf.float32)
            outputs["ctc_mask"] = mask
        return outputs

    def encode(self, frames: tf.Tensor, mask: tf.Tensor) -> tf.Tensor:
        """The encoder's outputs: the steps Seq2SeqTransformer.call takes on embedded inputs
        (masked frames, sinusoidal positions, dropout, the stack under a padding mask)."""
        frames *= tf.cast(mask, frames.dtype)[..., tf.newaxis]
        frames += tf.cast(self.position_embedding(frames), frames.dtype)
        attention_mask = tf.cast(mask[:, tf.newaxis, :], frames.dtype)
        attention_mask *= tf.ones_like(frames[:, :, :1])
        return self.encoder_layer(self.encoder_dropout(frames), attention_mask=attention_mask)

    def decode(self, encoded: tf.Tensor, mask: tf.Tensor, targets: tf.Tensor) -> tf.Tensor:
        """Teacher-forced logits [B, L, V] (float32): the decoder reads the targets shifted
        right, as Seq2SeqTransformer.call does."""
        shifted = tf.pad(targets, [[0, 0], [1, 0]])[:, :-1]
        embedded = self.embedding_lookup(shifted)
        embedded += tf.cast(self.position_embedding(embedded), embedded.dtype)
        length, batch = tf.shape(targets)[1], tf.shape(targets)[0]
        causal = tf.linalg.band_part(tf.ones([length, length]), -1, 0)
        causal = tf.tile(causal[tf.newaxis], [batch, 1, 1])
        cross = tf.tile(tf.cast(mask[:, tf.newaxis, :], encoded.dtype), [1, length, 1])
        outputs = self.decoder_layer(
            self.decoder_dropout(embedded),
            encoded,
            self_attention_mask=causal,
            cross_attention_mask=cross,
        )
        logits = self._embedding_linear(self.embedding_lookup.embeddings, outputs)
        return tf.cast(logits, tf.float32)

    def transcribe(
        self, features: tf.Tensor, feature_mask: tf.Tensor, beam_size: int, alpha: float
    ) -> dict[str, tf.Tensor]:
        """Beam search of `beam_size` beams with length normalisation `alpha` (Model Garden's
        (5 + length)^alpha / 6^alpha); up to decode_max_length tokens."""
        chosen = self._beam_size, self._alpha
        self._beam_size, self._alpha = beam_size, alpha  # read when call() traces the search
        try:
            return self({"features": features, "feature_mask": feature_mask}, training=False)
        finally:
            self._beam_size, self._alpha = chosen


@gin.configurable
def asr_transformer(
    encoder_layers: int = 6,
    decoder_layers: int = 4,
    hidden_size: int = 384,
    inner_size: int = 1536,
    num_heads: int = 4,
    conv_channels: int = 384,
    dropout_rate: float = 0.1,
    vocab_size: int = 31,  # models.data.transcripts.Characters: 3 special ids, space, ', a-z
    decode_max_length: int = 200,
    ctc_head: bool = False,
    beam_size: int = 4,
    alpha: float = 0.6,
    num_mel_bins: int = NUM_MEL_BINS,
) -> ASRTransformer:
    """The ASR Transformer at the given sizes, built so that its weights exist (and count).
    Dropout applies to the inputs of each stack, attention weights, sub-layer outputs and
    feed-forward activations; `decode_max_length`: tokens a transcript may hold."""

    def stack(kind, layers):
        return kind(
            num_layers=layers,
            num_attention_heads=num_heads,
            intermediate_size=inner_size,
            dropout_rate=dropout_rate,
            attention_dropout_rate=dropout_rate,
            intermediate_dropout=dropout_rate,
        )

    model = ASRTransformer(
        front_end=FrontEnd(conv_channels, hidden_size),
        ctc_head=ctc_head,
        vocab_size=vocab_size,
        embedding_width=hidden_size,
        dropout_rate=dropout_rate,
        decode_max_length=decode_max_length,
        beam_size=beam_size,
        alpha=alpha,
        encoder_layer=stack(models.TransformerEncoder, encoder_layers),
        decoder_layer=stack(models.TransformerDecoder, decoder_layers),
        eos_id=EOS_ID,
    )
    features = tf.zeros([1, 8, num_mel_bins])
    mask = tf.ones([1, 8], tf.int32)
    model({"features": features, "feature_mask": mask, "targets": tf.ones([1, 2], tf.int32)})
    return model


def example_spec(seconds: float = 10.0, tokens: int = 100) -> dict[str, tf.TensorSpec]:
    """One clip of `seconds` (10 ms frames) and its transcript (batch 1), for FLOPs counts."""
    frames = int(seconds * 100)
    return {
        "features": tf.TensorSpec([1, frames, NUM_MEL_BINS], tf.float32),
        "feature_mask": tf.TensorSpec([1, frames], tf.int32),
        "targets": tf.TensorSpec([1, tokens], tf.int32),
    }


_T2T = (
    "Tensor2Tensor's tensor2tensor/models/transformer.py (transformer_librispeech_v1 and _v2, "
    "the Cloud TPU ASR tutorial's hyper-parameter sets; no parameter count published)"
)
# name: (encoder layers, decoder layers, width, feed-forward width, heads, front-end channels,
# dropout, source).
SIZES = {
    "small": (4, 2, 144, 576, 4, 32, 0.1, "this zoo's built-in recipe"),
    "t2t_v1": (5, 3, 256, 1024, 4, 128, 0.1, _T2T),
    "t2t_v2": (6, 4, 384, 1536, 2, 128, 0.2, _T2T),
}

for _size, (_enc, _dec, _width, _inner, _heads, _channels, _dropout, _source) in SIZES.items():
    register_model(
        f"asr_transformer_{_size}",
        "asr_transformer",
        f"ASR Transformer-{_size} (E={_enc}, D={_dec}, d={_width}, f={_inner}, h={_heads}, "
        f"front end {_channels} channels); sizes: {_source}",
        task="SpeechRecognitionTask",
        fixed={
            "encoder_layers": _enc,
            "decoder_layers": _dec,
            "hidden_size": _width,
            "inner_size": _inner,
            "num_heads": _heads,
            "conv_channels": _channels,
        },
        defaults={"dropout_rate": _dropout},
    )(asr_transformer)
