"""Tokenised text: WordPiece vocabulary files and tensorflow-text's in-graph BERT tokenizer,
shared by the text families (BERT, Transformer, QANet, Transformer-XL)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from models.core.errors import UsageError

if TYPE_CHECKING:
    import tensorflow_text

# BERT's special tokens: padding, unknown word, sequence start, separator, masked-LM slot.
PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
RESERVED_TOKENS = (PAD, UNK, CLS, SEP, MASK)
VOCAB_FILE = "vocab.txt"  # Beside records, the vocabulary that made them.
# A longer word is one [UNK], as in Model Garden's tokenization.py (Google's first release: 200);
# it counts characters, tensorflow-text bytes: the same for ASCII.
MAX_WORD_LENGTH = 400


def read_vocab(path: str) -> list[str]:
    """The tokens of a WordPiece vocabulary file (one per line, the id is the line number, as
    Google's BERT releases write it), or UsageError for a file BERT cannot use."""
    import tensorflow as tf

    if not tf.io.gfile.exists(path) or tf.io.gfile.isdir(path):
        raise UsageError(f"vocabulary {path} is not a file")
    with tf.io.gfile.GFile(path) as file:
        tokens = [line.rstrip("\r\n") for line in file]
    while tokens and not tokens[-1].strip():
        tokens.pop()
    if not tokens:
        raise UsageError(f"vocabulary {path} is empty")
    check_vocab(tokens, path)
    return tokens


def check_vocab(tokens: Sequence[str], source: str) -> None:
    """UsageError when a token is blank or repeated, or one of BERT's special tokens is absent."""
    seen: dict[str, int] = {}
    for line, token in enumerate(tokens, start=1):
        if not token.strip() or token != token.strip():
            raise UsageError(f"vocabulary {source} line {line} is blank or has spaces: {token!r}")
        if token in seen:
            raise UsageError(
                f"vocabulary {source} has {token!r} twice (lines {seen[token]} and {line})"
            )
        seen[token] = line
    missing = [token for token in RESERVED_TOKENS if token not in seen]
    if missing:
        raise UsageError(f"vocabulary {source} lacks BERT's special tokens {', '.join(missing)}")


def write_vocab(tokens: Iterable[str], path: str) -> None:
    """Writes one token per line, atomically: readers never see half a vocabulary."""
    import tensorflow as tf

    tokens = list(tokens)
    check_vocab(tokens, path)
    staging = f"{path}.tmp-{os.getpid()}"
    with tf.io.gfile.GFile(staging, "w") as file:
        file.write("".join(f"{token}\n" for token in tokens))
    tf.io.gfile.rename(staging, path, overwrite=True)


def bert_tokenizer(
    vocab: str | Sequence[str], lower_case: bool = True
) -> tensorflow_text.FastBertTokenizer:
    """tensorflow-text's in-graph BERT tokenizer over a vocabulary file or token list: strings
    [texts] to WordPiece ids [texts, (tokens)], splitting words as Google's BERT tokenizer does;
    `lower_case` lower-cases and strips accents, as the uncased BERT releases do."""
    import tensorflow_text

    if isinstance(vocab, str):
        tokens = read_vocab(vocab)
    else:
        tokens = list(vocab)
        check_vocab(tokens, "given as a list")
    return tensorflow_text.FastBertTokenizer(
        vocab=tokens,
        unknown_token=UNK,
        max_bytes_per_word=MAX_WORD_LENGTH,
        lower_case_nfd_strip_accents=lower_case,
    )


def tokenize_with_masks(
    tokenizer: tensorflow_text.FastBertTokenizer, texts, mask_id: int
) -> tensorflow_text.RaggedTensor:
    """WordPiece ids [texts, (tokens)] of `texts`, each literal "[MASK]" in them the mask
    token (tokenised, it would be '[', 'mask', ']'): the masked-LM's raw-text input."""
    import tensorflow as tf

    pieces = tf.strings.split(texts, MASK)  # [texts, (pieces)]
    ids = tokenizer.tokenize(pieces.flat_values)  # [pieces, (tokens)]
    masks = tf.fill(tf.stack([ids.nrows(), 1]), tf.cast(mask_id, ids.dtype))
    marked = tf.concat([ids, tf.RaggedTensor.from_tensor(masks)], axis=1)  # piece, [MASK]
    return pieces.with_flat_values(marked).merge_dims(1, 2)[:, :-1]  # none after the last
