"""The ASR Transformer's layout and decoding: the parameter formula of
models/asr_transformer/model.py counts what Model Garden and the front end build, the front end
keeps a quarter of each clip's frames (and masks the rest), and greedy decoding picks what the
teacher-forced model ranks first."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from models.asr_transformer.model import SIZES, parameter_count, subsampled_length
from models.core import registry


def _count(model) -> int:
    return int(sum(np.prod(weight.shape) for weight in model.weights))


@pytest.mark.parametrize(("size", "vocab", "ctc"), [("small", 31, True), ("t2t_v1", 258, False)])
def test_formula_counts_the_built_model(size, vocab, ctc):
    encoder, decoder, width, inner, _, channels = SIZES[size][:6]
    model = registry.create_model(f"asr_transformer_{size}", vocab_size=vocab, ctc_head=ctc)
    expected = parameter_count(vocab, encoder, decoder, width, inner, channels, ctc_head=ctc)
    assert _count(model) == expected


def test_front_end_keeps_a_quarter_of_each_clips_frames():
    model = registry.create_model("asr_transformer_small", ctc_head=True, dropout_rate=0.0)
    lengths = [37, 20, 1]
    mask = tf.sequence_mask(lengths, 37, tf.int32)
    features = tf.random.stateless_normal([3, 37, 80], [1, 2])
    outputs = model(
        {"features": features, "feature_mask": mask, "targets": tf.ones([3, 4], tf.int32)}
    )
    kept = tf.reduce_sum(tf.cast(outputs["ctc_mask"], tf.int32), axis=1).numpy()
    assert kept.tolist() == [10, 5, 1] == subsampled_length(np.array(lengths)).tolist()
    # frames past a clip's end change nothing the model computes for it
    noisy = features + 5.0 * (1.0 - tf.cast(mask, tf.float32))[..., tf.newaxis]
    again = model({"features": noisy, "feature_mask": mask, "targets": tf.ones([3, 4], tf.int32)})
    np.testing.assert_allclose(again["logits"], outputs["logits"], atol=1e-4)
    # nor does the length its batch pads it to (serving pads to the batch's longest clip,
    # evaluation to the recipe's): odd and even lengths alike
    for frames in (38, 39, 40, 41, 44):
        longer = tf.pad(features, [[0, 0], [0, frames - 37], [0, 0]])
        padded = tf.sequence_mask(lengths, frames, tf.int32)
        inputs = {"features": longer, "feature_mask": padded, "targets": tf.ones([3, 4], tf.int32)}
        np.testing.assert_allclose(model(inputs)["logits"], outputs["logits"], atol=1e-3)


def test_greedy_transcript_takes_the_teacher_forced_argmax():
    tf.random.set_seed(1)
    model = registry.create_model("asr_transformer_small", dropout_rate=0.0, decode_max_length=12)
    features = tf.random.stateless_normal([2, 40, 80], [3, 4])
    mask = tf.sequence_mask([40, 24], 40, tf.int32)
    greedy = model.transcribe(features, mask, beam_size=1, alpha=0.6)["outputs"].numpy()
    logits = model({"features": features, "feature_mask": mask, "targets": tf.constant(greedy)})
    logits = logits["logits"].numpy()
    for row, scores in zip(greedy, logits, strict=True):
        ends = np.flatnonzero(row <= 1)  # up to the first EOS (1) or padding id (0)
        length = ends[0] + 1 if ends.size else len(row)
        picked = scores[np.arange(length), row[:length]]
        np.testing.assert_allclose(picked, scores[:length].max(axis=-1), atol=1e-4)
    assert model.get_config()["beam_size"] == 4  # transcribe() leaves the model's own setting
