"""BERT's encoder is laid out as Google's released checkpoints: each size holds exactly the
weights that KerasHub's presets of those checkpoints count (keras-hub,
keras_hub/src/models/bert/bert_presets.py: `params` of bert_tiny_en_uncased ...
bert_large_en_uncased; the encoder with its pooler, 30,522 tokens, 512 positions)."""

from __future__ import annotations

import pytest
import tensorflow as tf

from models.bert.model import INPUTS, SIZES, bert_encoder
from models.core.registry import count_parameters

GOOGLE_RELEASE = {
    "tiny": 4_385_920,
    "small": 28_763_648,
    "medium": 41_373_184,
    "base": 109_482_240,
    "large": 335_141_888,
}


@pytest.mark.slow
@pytest.mark.parametrize("size", GOOGLE_RELEASE)
def test_encoder_holds_exactly_the_weights_of_googles_release(size):
    layers, hidden = SIZES[size]
    encoder = bert_encoder(num_layers=layers, hidden_size=hidden)
    encoder(dict.fromkeys(INPUTS, tf.zeros([1, 2], tf.int32)))
    assert count_parameters(encoder) == GOOGLE_RELEASE[size]
