"""The speech records that the LibriSpeech converter and the built-in speech write and the speech
input reads: one tf.train.Example a clip, its 16 kHz mono audio as raw int16 PCM (decoded once
by the converter; the graph only reinterprets the bytes), the transcript as the source wrote it,
and the ids that name the clip. `normalise_text` (and `normalise_texts`, its in-graph twin) is
the one text form that targets and word error rates use."""

from __future__ import annotations

import re
import unicodedata

import numpy as np
import tensorflow as tf

SAMPLE_RATE = 16000
AUDIO = "audio"  # bytes: int16 little-endian mono PCM at SAMPLE_RATE
NUM_SAMPLES = "num_samples"  # int64
TRANSCRIPT = "transcript"  # bytes, UTF-8, as the source wrote it (LibriSpeech: upper case)
UTTERANCE = "utterance_id"  # bytes "<speaker>-<chapter>-<utterance>" (LibriSpeech's)
SPEAKER = "speaker_id"  # bytes (LibriSpeech's number as text; built-in: the voice name)
UNIQUE_ID = "unique_id"  # int64, 0..n-1 within a split, in write order
SPLIT_NAME = re.compile(r"[a-z][a-z0-9_]*")  # train, validation, test, test_other ...

FEATURES = {
    AUDIO: tf.io.FixedLenFeature([], tf.string),
    NUM_SAMPLES: tf.io.FixedLenFeature([], tf.int64),
    TRANSCRIPT: tf.io.FixedLenFeature([], tf.string),
    UTTERANCE: tf.io.FixedLenFeature([], tf.string),
    SPEAKER: tf.io.FixedLenFeature([], tf.string),
    UNIQUE_ID: tf.io.FixedLenFeature([], tf.int64),
}

# normalise_text's steps after accents and case: what is no letter or apostrophe is a space,
# an apostrophe that is not inside a word goes, then runs of spaces become one.
_NOT_LETTERS = r"[^a-z']+"
_EDGE_APOSTROPHES = r"\B'+|'+\B"  # on [a-z' ] text: an apostrophe beside a space or an end
_SPACES = r" +"


def encode(
    samples: np.ndarray, transcript: str, utterance_id: str, speaker: str, unique_id: int
) -> bytes:
    """One serialised tf.train.Example of a clip (int16 samples at SAMPLE_RATE)."""

    def text(value: str) -> tf.train.Feature:
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value.encode("utf-8")]))

    def integer(value: int) -> tf.train.Feature:
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[int(value)]))

    pcm = np.asarray(samples, dtype="<i2").tobytes()
    feature = {
        AUDIO: tf.train.Feature(bytes_list=tf.train.BytesList(value=[pcm])),
        NUM_SAMPLES: integer(len(samples)),
        TRANSCRIPT: text(transcript),
        UTTERANCE: text(utterance_id),
        SPEAKER: text(speaker),
        UNIQUE_ID: integer(unique_id),
    }
    example = tf.train.Example(features=tf.train.Features(feature=feature))
    return example.SerializeToString(deterministic=True)


def normalise_text(text: str) -> str:
    """Lower case letters a-z, apostrophes inside words and single spaces (accents stripped,
    anything else a space): what targets are made of and word error rates compare."""
    decomposed = unicodedata.normalize("NFKD", text)
    plain = "".join(c for c in decomposed if unicodedata.category(c) != "Mn").lower()
    letters = re.sub(_NOT_LETTERS, " ", plain, flags=re.ASCII)
    words = re.sub(_EDGE_APOSTROPHES, "", letters, flags=re.ASCII)
    return re.sub(_SPACES, " ", words).strip()


def normalise_texts(texts: tf.Tensor) -> tf.Tensor:
    """normalise_text in the graph (tf.string of any shape), for the input pipeline and the
    exported model."""
    import tensorflow_text

    decomposed = tensorflow_text.normalize_utf8(texts, "NFKD")
    plain = tf.strings.lower(tf.strings.regex_replace(decomposed, r"\p{Mn}", ""), "utf-8")
    letters = tf.strings.regex_replace(plain, _NOT_LETTERS, " ")
    words = tf.strings.regex_replace(letters, _EDGE_APOSTROPHES, "")
    return tf.strings.strip(tf.strings.regex_replace(words, _SPACES, " "))
