"""Learns a WordPiece vocabulary from text files with tensorflow-text's vocabulary learner, the
algorithm of Google's BERT vocabularies, over words split as models.data.text's tokenizer splits
them.

Usage: python -m models.data.convert.vocab --input=FILES --output=vocab.txt [--vocab_size=N]
"""

from __future__ import annotations

import os
import time
from collections import Counter

from absl import flags

from models.core.errors import UsageError, require_flags, run_app
from models.data.text import RESERVED_TOKENS, write_vocab

MIN_VOCAB_SIZE = 64  # BERT's special tokens and room for the corpus's characters.
BATCH_LINES = 1024


def text_files(patterns: list[str], flag: str = "input") -> list[str]:
    """The files that the comma-separated --<flag> patterns match (each pattern's sorted), or
    UsageError naming a pattern that matches no file."""
    import tensorflow as tf

    files: list[str] = []
    for pattern in patterns:
        matched = sorted(path for path in tf.io.gfile.glob(pattern) if not tf.io.gfile.isdir(path))
        if not matched:
            raise UsageError(f"--{flag} {pattern} matches no file")
        files += matched
    return files


def count_words(files: list[str], lower_case: bool, progress: bool = False) -> tuple[Counter, int]:
    """(word counts, text lines) of the files, split into words by BERT's basic tokenizer
    (whitespace, punctuation, CJK characters; lower-cased without accents when `lower_case`),
    as tensorflow-text's own vocabulary tool splits them."""
    import tensorflow as tf
    from tensorflow_text.python.ops.bert_tokenizer import BasicTokenizer
    from tqdm import tqdm

    split = BasicTokenizer(lower_case=lower_case)
    lines = tf.data.TextLineDataset(files).filter(lambda line: tf.strings.length(line) > 0)
    batches = lines.batch(BATCH_LINES).map(
        lambda batch: (split.tokenize(batch).flat_values, tf.size(batch))
    )
    counts: Counter = Counter()
    total = 0
    with tqdm(desc="counting words", unit=" lines", disable=not progress, delay=1) as bar:
        for words, size in batches.as_numpy_iterator():
            counts.update(words)
            total += int(size)
            bar.update(int(size))
    if not counts:
        raise UsageError(f"--input has no words in {len(files)} file(s): {', '.join(files[:3])}")
    return Counter({word.decode(): count for word, count in counts.items()}), total


def learn_vocab(
    files: list[str], vocab_size: int, lower_case: bool = True, progress: bool = False
) -> tuple[list[str], int, int]:
    """(vocabulary, text lines, distinct words): BERT's special tokens first, then the
    learned tokens (whole words, `##` word pieces and every character the corpus holds)."""
    from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner

    if vocab_size < MIN_VOCAB_SIZE:
        raise UsageError(f"--vocab_size must be at least {MIN_VOCAB_SIZE}, got {vocab_size}")
    counts, lines = count_words(files, lower_case, progress)
    vocab = learner.learn(counts.items(), vocab_size, list(RESERVED_TOKENS), lower_thresh=1)
    return vocab, lines, len(counts)


def check_output(path: str) -> None:
    """UsageError, before any work, when the vocabulary file cannot be written there."""
    import tensorflow as tf

    folder = os.path.dirname(path) or "."
    if tf.io.gfile.isdir(path):
        raise UsageError(f"--output {path} is a folder; name the vocabulary file to write")
    if not tf.io.gfile.isdir(folder):
        raise UsageError(f"--output {path}: folder {folder} does not exist")


# ---------------------------------------------------------------- command line


def define_flags() -> None:
    """Defines the converter's flags (only when run as a program, so importing it is side-free)."""
    flags.DEFINE_list(
        "input", None, "Text files or glob patterns, comma-separated (one sentence per line)."
    )
    flags.DEFINE_string("output", None, "The vocabulary file to write (one token per line).")
    flags.DEFINE_integer(
        "vocab_size", 8000, "Vocabulary size to aim at; the learner lands near it (BERT's: 30522)."
    )
    flags.DEFINE_boolean(
        "lower_case",
        True,
        "Lower-case and strip accents first (uncased BERT); --nolower_case: cased.",
    )


def main(argv: list[str]) -> None:
    """Learns the vocabulary with the parsed flags and prints what was written."""
    f = flags.FLAGS
    require_flags(argv, "input", "output")
    start = time.monotonic()
    files = text_files(f.input)
    check_output(f.output)
    print(f"learning a vocabulary of about {f.vocab_size} tokens from {len(files)} file(s)")
    vocab, lines, words = learn_vocab(files, f.vocab_size, f.lower_case, progress=True)
    write_vocab(vocab, f.output)
    print(
        f"wrote {len(vocab)} tokens to {f.output} ({lines} lines, {words} distinct words, "
        f"{time.monotonic() - start:.1f} s)"
    )


if __name__ == "__main__":
    define_flags()
    run_app(main)
