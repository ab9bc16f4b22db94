"""Speech targets and their score: transcripts (normalised by speech_schema.normalise_text) as
character or WordPiece ids in the graph, both with pad id 0 and end-of-sequence id 1, and the
word error rate of decoded text (jiwer's).

Characters need nothing beside the records. WordPieces are tensorflow-text's
FastWordpieceTokenizer on whitespace-split words (its own pre-tokenisation would split "don't"
at the apostrophe) over data_dir/wordpiece.vocab, which the converter learns from the first
split it writes (`--wordpiece_vocab_size`): <pad>, </s>, <unk>, the learned tokens, then every
letter and apostrophe, word-initial and as a ## suffix, so that no transcript holds an unknown."""

from __future__ import annotations

import os
import string
from collections import Counter
from collections.abc import Iterable, Sequence

import tensorflow as tf

from models.core.errors import UsageError, check_choice
from models.data.speech_schema import normalise_text, normalise_texts

PAD_ID, EOS_ID, UNK_ID = 0, 1, 2
SPECIAL = ("<pad>", "</s>", "<unk>")
CHARACTERS = (" ", "'", *string.ascii_lowercase)  # ids 3, 4, 5.. after SPECIAL
KINDS = ("characters", "wordpieces")
VOCAB_FILE = "wordpiece.vocab"  # beside the records: one token a line, the id its line number
SUFFIX = "##"
MIN_WORDPIECES = 64  # the special tokens, the alphabet twice, and a few words


def _before_eos(ids: tf.Tensor | tf.RaggedTensor) -> tf.Tensor:
    """int32 [n, L] of ids with padding, unknowns, the end-of-sequence id and all after it 0."""
    if isinstance(ids, tf.RaggedTensor):
        ids = ids.to_tensor(PAD_ID)
    ids = tf.cast(ids, tf.int32)
    ended = tf.math.cumsum(tf.cast(ids == EOS_ID, tf.int32), axis=-1) > 0
    return tf.where(ended | (ids <= UNK_ID), PAD_ID, ids)


class Characters(tf.Module):
    """Transcripts as character ids: 0 pad, 1 end of sequence, 2 unknown, then space,
    apostrophe and a..z."""

    vocab_size = len(SPECIAL) + len(CHARACTERS)

    def __init__(self):
        super().__init__(name="characters")
        table = [UNK_ID] * 128
        for index, character in enumerate(CHARACTERS, start=len(SPECIAL)):
            table[ord(character)] = index
        self._ids = tf.constant(table, tf.int32)
        self._characters = tf.constant(["", "", "", *CHARACTERS])

    def tokenize(self, texts: tf.Tensor) -> tf.RaggedTensor:
        """tf.string [n] -> int32 ids [n, (characters)] of the normalised text, no EOS."""
        codes = tf.strings.unicode_decode(normalise_texts(texts), "UTF-8")
        return tf.ragged.map_flat_values(lambda c: tf.gather(self._ids, tf.minimum(c, 127)), codes)

    def detokenize(self, ids: tf.Tensor | tf.RaggedTensor) -> tf.Tensor:
        """int32 [n, L] (or ragged) -> tf.string [n]: the text up to the first EOS."""
        kept = tf.minimum(_before_eos(ids), self.vocab_size - 1)
        return tf.strings.reduce_join(tf.gather(self._characters, kept), axis=-1)


class Wordpieces(tf.Module):
    """Transcripts as WordPiece ids of a vocabulary (0 pad, 1 end of sequence, 2 unknown):
    tensorflow-text's FastWordpieceTokenizer, word by word (a tf.Module: an exported model
    that tracks it keeps the tokenizer's model)."""

    def __init__(self, vocab: Sequence[str]):
        import tensorflow_text

        super().__init__(name="wordpieces")
        self.vocab = list(vocab)
        self.vocab_size = len(self.vocab)
        self._tokenizer = tensorflow_text.FastWordpieceTokenizer(
            self.vocab,
            suffix_indicator=SUFFIX,
            token_out_type=tf.int32,
            unknown_token=SPECIAL[UNK_ID],
            no_pretokenization=True,
            support_detokenization=True,
        )

    def tokenize(self, texts: tf.Tensor) -> tf.RaggedTensor:
        """tf.string [n] -> int32 ids [n, (pieces)] of the normalised text's words, no EOS."""
        words = tf.strings.split(normalise_texts(texts))
        return self._tokenizer.tokenize(words).merge_dims(1, 2)

    def detokenize(self, ids: tf.Tensor | tf.RaggedTensor) -> tf.Tensor:
        """int32 [n, L] (or ragged) -> tf.string [n]: the words up to the first EOS."""
        kept = _before_eos(ids)
        kept = tf.minimum(kept, self.vocab_size - 1)
        return self._tokenizer.detokenize(tf.ragged.boolean_mask(kept, kept != PAD_ID))


def check_wordpieces(tokens: Sequence[str], source: str) -> None:
    """UsageError naming source when the vocabulary does not start with <pad> </s> <unk>, or
    holds a blank, spaced or repeated token."""
    if tuple(tokens[: len(SPECIAL)]) != SPECIAL:
        raise UsageError(
            f"WordPiece vocabulary {source} must start with {' '.join(SPECIAL)} (ids 0-2); "
            "learn one with the converter's --wordpiece_vocab_size"
        )
    seen: set[str] = set()
    for line, token in enumerate(tokens, start=1):
        if not token or token != token.strip() or token in seen:
            raise UsageError(f"WordPiece vocabulary {source} line {line} is blank or repeated")
        seen.add(token)


def read_wordpieces(path: str) -> list[str]:
    """The tokens of a WordPiece vocabulary file; UsageError when absent or malformed."""
    if not tf.io.gfile.exists(path) or tf.io.gfile.isdir(path):
        raise UsageError(f"WordPiece vocabulary {path} is not a file")
    with tf.io.gfile.GFile(path) as file:
        tokens = [line.rstrip("\r\n") for line in file]
    check_wordpieces(tokens, path)
    return tokens


def learn_wordpieces(texts: Iterable[str], vocab_size: int) -> list[str]:
    """A vocabulary of at most vocab_size tokens learned from the normalised texts' words
    (tensorflow-text's learner, BERT's algorithm; its most frequent tokens kept), then every
    letter and apostrophe, word-initial and as a suffix, so that nothing is unknown."""
    from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner

    if vocab_size < MIN_WORDPIECES:
        raise UsageError(f"--wordpiece_vocab_size must be at least {MIN_WORDPIECES}")
    counts = Counter(word for text in texts for word in normalise_text(text).split())
    alphabet = [c for c in CHARACTERS if c != " "]
    alphabet += [SUFFIX + c for c in alphabet]
    learned = learner.learn(counts.items(), vocab_size, list(SPECIAL), lower_thresh=1)
    words = [token for token in learned if token not in {*SPECIAL, *alphabet}]
    return [*SPECIAL, *words[: vocab_size - len(SPECIAL) - len(alphabet)], *alphabet]


def targets(kind: str, data_dir: str | None) -> Characters | Wordpieces:
    """The tokenizer of speech_input.targets: characters, or the folder's WordPieces."""
    check_choice(kind, KINDS, "speech_input.targets")
    if kind == "characters":
        return Characters()
    path = os.path.join(data_dir, VOCAB_FILE)
    if not tf.io.gfile.exists(path):
        raise UsageError(
            f"--data_dir {data_dir} has no {VOCAB_FILE}: convert its train split with "
            "--wordpiece_vocab_size=N, or set speech_input.targets = 'characters'"
        )
    return Wordpieces(read_wordpieces(path))


def word_error_rate(references: list[str], hypotheses: list[str]) -> float:
    """jiwer's word error rate of the normalised texts (edits / reference words)."""
    import jiwer

    return float(
        jiwer.wer(
            [normalise_text(text) for text in references],
            [normalise_text(text) for text in hypotheses],
        )
    )
