"""Writes BERT pretraining TFRecords from text files (one sentence per line, a blank line between
documents) in the schema of Google's create_pretraining_data.py (`input_ids`, `input_mask`,
`segment_ids`, `masked_lm_positions`, `masked_lm_ids`, `masked_lm_weights`,
`next_sentence_labels`), by Model Garden's own copy of that program: sentence pairs with a
random next sentence half the time, static masks, each document `--dupe_factor` times.

Usage: python -m models.data.convert.bert_pretraining --input=FILES --vocab=vocab.txt
    --output_dir=OUT [--max_seq_length=128 --max_predictions_per_seq=20 --masked_lm_prob=0.15
    --dupe_factor=10 --do_whole_word_mask]
"""

from __future__ import annotations

import random
import time
from dataclasses import asdict, dataclass
from typing import Any

from absl import flags, logging

from models.core.errors import UsageError, require_flags, run_app
from models.data.convert.text_output import finish_split, prepare_output_dir, staged_shards
from models.data.convert.vocab import text_files
from models.data.text import read_vocab


@dataclass(frozen=True)
class Masking:
    """How sentence pairs are cut and masked (create_pretraining_data.py's flags and defaults)."""

    max_seq_length: int = 128
    max_predictions_per_seq: int = 20
    masked_lm_prob: float = 0.15
    dupe_factor: int = 10
    short_seq_prob: float = 0.1
    do_whole_word_mask: bool = False
    do_lower_case: bool = True
    random_seed: int = 12345

    def check(self) -> None:
        """UsageError for settings that would write unusable or no records."""
        if self.max_seq_length < 8:
            raise UsageError(f"--max_seq_length must be at least 8, got {self.max_seq_length}")
        if not 1 <= self.max_predictions_per_seq <= self.max_seq_length:
            raise UsageError(
                f"--max_predictions_per_seq must be in [1, --max_seq_length "
                f"{self.max_seq_length}], got {self.max_predictions_per_seq}"
            )
        if not 0.0 < self.masked_lm_prob < 1.0:
            raise UsageError(f"--masked_lm_prob must be in (0, 1), got {self.masked_lm_prob}")
        if self.dupe_factor < 1:
            raise UsageError(f"--dupe_factor must be at least 1, got {self.dupe_factor}")
        if not 0.0 <= self.short_seq_prob <= 1.0:
            raise UsageError(f"--short_seq_prob must be in [0, 1], got {self.short_seq_prob}")


MASKING_FLAGS = tuple(Masking.__dataclass_fields__)


class _CountingTokenizer:
    """The reference tokenizer, advancing a progress bar per line it tokenises (Model Garden's
    create_training_instances tokenises each input line once)."""

    def __init__(self, tokenizer: Any, bar: Any):
        self._tokenizer, self._bar = tokenizer, bar
        self.vocab = tokenizer.vocab

    def tokenize(self, text: str) -> list[str]:
        self._bar.update()
        return self._tokenizer.tokenize(text)


def convert(
    input_files: list[str],
    vocab: str,
    output_dir: str,
    split: str = "train",
    num_shards: int = 8,
    masking: Masking = Masking(),
    progress: bool = False,
) -> dict[str, Any]:
    """Writes `<split>-%05d-of-%05d` shards and merges the split into dataset_info.json; no
    shard is visible before all are written. Returns the info written."""
    from official.nlp.data import create_pretraining_data as reference
    from official.nlp.tools.tokenization import FullTokenizer
    from tqdm import tqdm

    masking.check()
    if num_shards < 1:
        raise UsageError(f"--num_shards must be at least 1, got {num_shards}")
    tokens = read_vocab(vocab)
    shapes = {
        "vocab_size": len(tokens),
        "max_seq_length": masking.max_seq_length,
        "max_predictions_per_seq": masking.max_predictions_per_seq,
    }
    prepare_output_dir(output_dir, split, tokens, shapes)
    tokenizer = FullTokenizer(vocab, do_lower_case=masking.do_lower_case)
    with tqdm(desc="reading", unit=" lines", disable=not progress, delay=1) as bar:
        instances = reference.create_training_instances(
            input_files,
            _CountingTokenizer(tokenizer, bar),
            reference.get_processor_text_fn(False, masking.do_lower_case),
            masking.max_seq_length,
            masking.dupe_factor,
            masking.short_seq_prob,
            masking.masked_lm_prob,
            masking.max_predictions_per_seq,
            random.Random(masking.random_seed),
            masking.do_whole_word_mask,
        )
    if not instances:
        raise UsageError(
            f"--input has no text to make sentence pairs of: {', '.join(input_files[:3])}"
        )
    shards = min(num_shards, len(instances))
    with staged_shards(output_dir, split, shards) as partial:
        reference.write_instance_to_example_files(
            tqdm(instances, desc="writing", unit=" pairs", disable=not progress, delay=1),
            tokenizer,
            masking.max_seq_length,
            masking.max_predictions_per_seq,
            partial,
            gzip_compress=False,
            use_v2_feature_names=False,
        )
    info = {f"num_{split}_examples": len(instances), f"{split}_masking": asdict(masking), **shapes}
    return finish_split(output_dir, info, tokens)


# ---------------------------------------------------------------- command line


def define_flags() -> None:
    """Defines the converter's flags (only when run as a program, so importing it is side-free)."""
    flags.DEFINE_list(
        "input",
        None,
        "Text files or glob patterns, comma-separated: one sentence per line, a blank line "
        "between documents.",
    )
    flags.DEFINE_string("vocab", None, "WordPiece vocabulary file (models.data.convert.vocab).")
    flags.DEFINE_string("output_dir", None, "Where the TFRecord shards are written.")
    flags.DEFINE_string(
        "split", "train", "Split name: shards <split>-*-of-* (train, validation, ...)."
    )
    flags.DEFINE_integer("num_shards", 8, "Number of <split>-*-of-* TFRecord files.")
    # The masking flags are create_pretraining_data.py's own (names, defaults, help), which
    # Model Garden's copy defines when imported; --help lists them with ours.
    from official.nlp.data import create_pretraining_data  # noqa: F401

    for name in MASKING_FLAGS:
        flags.declare_key_flag(name)


def main(argv: list[str]) -> None:
    """Converts with the parsed flags and prints what was written."""
    f = flags.FLAGS
    require_flags(argv, "input", "vocab", "output_dir")
    logging.set_verbosity(logging.WARNING)  # Model Garden's writer logs its first 20 pairs
    start = time.monotonic()
    masking = Masking(**{name: f[name].value for name in MASKING_FLAGS})
    files = text_files(f.input)
    info = convert(files, f.vocab, f.output_dir, f.split, f.num_shards, masking, progress=True)
    print(
        f"wrote {info[f'num_{f.split}_examples']} {f.split} sentence pairs of up to "
        f"{masking.max_seq_length} tokens to {f.output_dir} ({time.monotonic() - start:.1f} s)"
    )


if __name__ == "__main__":
    define_flags()
    run_app(main)
