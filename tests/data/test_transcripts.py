"""Speech records and targets: the schema's encoding, one text normalisation in Python and in
the graph, character and WordPiece ids (pad 0, EOS 1) that detokenise back to the normalised
text, and a word error rate equal to jiwer's."""

from __future__ import annotations

import jiwer
import numpy as np
import pytest
import tensorflow as tf

from models.core.errors import UsageError
from models.data.speech_schema import FEATURES, encode, normalise_text, normalise_texts
from models.data.transcripts import (
    EOS_ID,
    SPECIAL,
    VOCAB_FILE,
    Characters,
    Wordpieces,
    learn_wordpieces,
    read_wordpieces,
    targets,
    word_error_rate,
)

TEXTS = [
    "NO ONE WHO HAD EVER SEEN CATHERINE MORLAND",
    "She didn't know -- what to say, to him!",
    "  'Tis the café's   NAÏVE \"quote\" 1990s o'clock '' x'  ",
    "ROCK 'N' ROLL students' rights",
    "",
]
NORMAL = [
    "no one who had ever seen catherine morland",
    "she didn't know what to say to him",
    "tis the cafe's naive quote s o'clock x",
    "rock n roll students rights",
    "",
]


def test_normalise_text_in_python_and_in_the_graph_agree():
    assert [normalise_text(text) for text in TEXTS] == NORMAL
    graph = normalise_texts(tf.constant(TEXTS)).numpy()
    assert [text.decode() for text in graph] == NORMAL


def test_a_clip_encodes_to_the_schema():
    samples = np.array([0, -32768, 32767, 5], np.int16)
    record = encode(samples, "HELLO THERE", "19-198-0001", "19", 7)
    parsed = tf.io.parse_single_example(record, FEATURES)
    assert parsed["audio"].numpy() == samples.astype("<i2").tobytes()
    assert int(parsed["num_samples"]) == 4 and int(parsed["unique_id"]) == 7
    assert parsed["transcript"].numpy() == b"HELLO THERE"
    assert (parsed["utterance_id"].numpy(), parsed["speaker_id"].numpy()) == (b"19-198-0001", b"19")


def test_characters_are_ids_from_3_and_come_back_up_to_eos():
    chars = Characters()
    assert chars.vocab_size == 31
    ids = chars.tokenize(tf.constant(["AB c'", "Z"]))
    assert ids.to_list() == [[5, 6, 3, 7], [30]]
    padded = tf.constant([[5, 6, 3, 7, EOS_ID, 0], [30, EOS_ID, 9, 9, 0, 0], [0, 0, 0, 0, 0, 0]])
    assert chars.detokenize(padded).numpy().tolist() == [b"ab c", b"z", b""]
    round_trip = chars.detokenize(chars.tokenize(tf.constant(TEXTS))).numpy()
    assert [text.decode() for text in round_trip] == NORMAL


def test_wordpieces_learned_from_transcripts_have_no_unknowns_and_come_back(tmp_path):
    vocab = learn_wordpieces(TEXTS * 3, 100)
    assert tuple(vocab[:3]) == SPECIAL and len(vocab) <= 100 and len(set(vocab)) == len(vocab)
    assert {"a", "##a", "'", "##'"} <= set(vocab)
    (tmp_path / VOCAB_FILE).write_text("".join(f"{token}\n" for token in vocab))
    pieces = targets("wordpieces", str(tmp_path))
    assert isinstance(pieces, Wordpieces) and pieces.vocab_size == len(vocab)
    unseen = ["Zebras quack", "don't"]
    ids = pieces.tokenize(tf.constant(TEXTS + unseen))
    assert 2 not in ids.flat_values.numpy()  # no unknown
    with_eos = tf.concat([ids, tf.ones([ids.nrows(), 1], tf.int32)], axis=1).to_tensor()
    back = [text.decode() for text in pieces.detokenize(with_eos).numpy()]
    assert back == NORMAL + ["zebras quack", "don't"]


def test_targets_kinds_and_bad_vocabularies_are_one_line(tmp_path):
    assert isinstance(targets("characters", str(tmp_path)), Characters)
    with pytest.raises(UsageError, match="has no wordpiece.vocab.*--wordpiece_vocab_size"):
        targets("wordpieces", str(tmp_path))
    with pytest.raises(UsageError, match="speech_input.targets = 'letters'"):
        targets("letters", str(tmp_path))
    (tmp_path / VOCAB_FILE).write_text("[PAD]\n[UNK]\na\n")
    with pytest.raises(UsageError, match="must start with <pad> </s> <unk>"):
        read_wordpieces(str(tmp_path / VOCAB_FILE))
    with pytest.raises(UsageError, match="at least 64"):
        learn_wordpieces(TEXTS, 10)


def test_word_error_rate_equals_jiwers():
    references = ["the cat sat on the mat", "a b c d", "hello world", "one two three"]
    hypotheses = ["the cat sit on mat", "a b x c d", "", "one two three"]
    assert word_error_rate(references, hypotheses) == pytest.approx(
        jiwer.wer(references, hypotheses)
    )
    assert word_error_rate(["Hello, World!"], ["hello world"]) == 0.0  # normalised first
    assert word_error_rate(["a b"], [""]) == jiwer.wer(["a b"], [""]) == 1.0
