"""Writes SQuAD v1.1 question-answering TFRecords from SQuAD's JSON (train-v1.1.json,
dev-v1.1.json) by Model Garden's copy of Google's run_squad.py featurisation: question and
context windows of `--max_seq_length` tokens, `--doc_stride` apart. Training records hold the
answer's token span (`start_positions`, `end_positions`), evaluation records `unique_ids`;
beside the evaluation records, the JSON itself (`validation.json`), which the official EM/F1
and the mapping of token spans back to text read.

Usage: python -m models.data.convert.squad --input=train-v1.1.json --vocab=vocab.txt
    --output_dir=OUT [--split=train|validation --max_seq_length=384 --doc_stride=128
    --max_query_length=64 --nodo_lower_case]
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any

from absl import flags, logging

from models.core.errors import UsageError, require_flags, run_app
from models.data.convert.text_output import finish_split, prepare_output_dir, staged_shards
from models.data.text import read_vocab

SPLITS = ("train", "validation")
EVAL_JSON = "validation.json"  # the evaluation split's questions and answers


@dataclass(frozen=True)
class Windows:
    """How questions and contexts become model inputs (run_squad.py's flags and defaults)."""

    max_seq_length: int = 384
    doc_stride: int = 128
    max_query_length: int = 64
    do_lower_case: bool = True

    def check(self) -> None:
        """UsageError for settings that leave no room for the context."""
        if self.max_query_length < 1:
            raise UsageError(f"--max_query_length must be at least 1, got {self.max_query_length}")
        if self.max_seq_length < self.max_query_length + 4:
            raise UsageError(
                f"--max_seq_length {self.max_seq_length} leaves no room for a context after "
                f"--max_query_length {self.max_query_length} and [CLS] [SEP] [SEP]"
            )
        if self.doc_stride < 1:
            raise UsageError(f"--doc_stride must be at least 1, got {self.doc_stride}")


WINDOW_FLAGS = tuple(Windows.__dataclass_fields__)


def read_squad(path: str, training: bool) -> list[Any]:
    """Model Garden's SquadExamples of a SQuAD v1.1 JSON file; UsageError, in one line, for a
    file that is missing, not JSON, not SQuAD's layout, or holds no question."""
    import tensorflow as tf
    from official.nlp.data import squad_lib

    if not tf.io.gfile.exists(path) or tf.io.gfile.isdir(path):
        raise UsageError(f"--input {path} is not a file")
    try:
        with tf.io.gfile.GFile(path) as file:
            articles = json.load(file)["data"]
        misplaced = [
            found
            for article in articles
            for paragraph in article["paragraphs"]
            for qa in paragraph["qas"]
            if (found := _check_question(paragraph["context"], qa, training))
        ]
    except json.JSONDecodeError as error:
        raise UsageError(f"--input {path} is not JSON: {error}") from None
    except (KeyError, TypeError) as error:
        raise UsageError(
            f"--input {path} is not SQuAD v1.1 JSON ({{'data': [{{'paragraphs': [{{'context', "
            f"'qas': [{{'id', 'question', 'answers'}}]}}]}}]}}): no {error}"
        ) from None
    except ValueError as error:
        raise UsageError(f"--input {path}: {error}") from None
    with _quiet_absl():  # its own warning per skipped question ("Could not find answer")
        examples = squad_lib.read_squad_examples(
            path, is_training=training, version_2_with_negative=False
        )
    if not examples:
        why = f": every answer is misplaced ({misplaced[0]})" if misplaced else ""
        raise UsageError(f"--input {path} holds no question{why}")
    if misplaced:
        print(
            f"note: {len(misplaced)} training questions skipped, their answer text not at "
            f"answer_start (first: {misplaced[0]})",
            file=sys.stderr,
        )
    return examples


@contextlib.contextmanager
def _quiet_absl():
    level = logging.get_verbosity()
    logging.set_verbosity(logging.ERROR)
    try:
        yield
    finally:
        logging.set_verbosity(level)


def _check_question(context: str, qa: dict, training: bool) -> str | None:
    """ValueError naming the question whose answers do not fit its context (training reads
    exactly one answer per question, as run_squad.py does); for training, a note when the
    answer's text is not at its answer_start (Model Garden skips such a question)."""
    for key in ("id", "question", "answers"):
        if key not in qa:
            raise KeyError(key)
    answers = qa["answers"]
    if training and len(answers) != 1:
        raise ValueError(f"question {qa['id']} has {len(answers)} answers; training needs one")
    for answer in answers:
        start, text = answer["answer_start"], answer["text"]
        if not isinstance(start, int) or not 0 <= start <= len(context) - len(text):
            raise ValueError(
                f"question {qa['id']}: answer_start {start} is outside its context "
                f"({len(context)} characters)"
            )
    if training and context[start : start + len(text)] != text:
        found = context[start : start + len(text)]
        return f"question {qa['id']}: {text!r}, where the context has {found!r}"
    return None


def features(examples: list[Any], vocab: str, windows: Windows, training: bool) -> list[Any]:
    """Model Garden's InputFeatures of `examples`: every question's context windows, ids from
    1,000,000,000 in order (what the evaluation records' `unique_ids` hold)."""
    from official.nlp.data import squad_lib
    from official.nlp.tools.tokenization import FullTokenizer

    tokenizer = FullTokenizer(vocab, do_lower_case=windows.do_lower_case)
    written: list[Any] = []
    squad_lib.convert_examples_to_features(
        examples,
        tokenizer,
        windows.max_seq_length,
        windows.doc_stride,
        windows.max_query_length,
        is_training=training,
        output_fn=lambda feature, is_padding=False: written.append(feature),
        batch_size=1,  # no padding features: the input pipeline pads evaluation
    )
    return written


def convert(
    input_file: str,
    vocab: str,
    output_dir: str,
    split: str = "train",
    windows: Windows = Windows(),
    num_shards: int = 1,
    progress: bool = False,
) -> dict[str, Any]:
    """Writes `<split>-%05d-of-%05d` shards (and, for validation, validation.json) and merges
    the split into dataset_info.json; nothing is visible before all is written. Returns the
    info written."""
    import tensorflow as tf
    from official.nlp.data import squad_lib
    from tqdm import tqdm

    if split not in SPLITS:
        raise UsageError(f"--split must be train or validation, got '{split}'")
    if num_shards < 1:
        raise UsageError(f"--num_shards must be at least 1, got {num_shards}")
    windows.check()
    tokens = read_vocab(vocab)
    shapes = {"vocab_size": len(tokens), **asdict(windows)}
    prepare_output_dir(output_dir, split, tokens, shapes)
    training = split == "train"
    examples = read_squad(input_file, training)
    windowed = features(
        tqdm(examples, desc="tokenizing", disable=not progress, delay=1), vocab, windows, training
    )
    shards = min(num_shards, len(windowed))
    with staged_shards(output_dir, split, shards) as paths:
        writers = [squad_lib.FeatureWriter(path, is_training=training) for path in paths]
        for index, feature in enumerate(windowed):
            writers[index % shards].process_feature(feature)
        for writer in writers:
            writer.close()
        if not training:
            tf.io.gfile.copy(input_file, os.path.join(output_dir, EVAL_JSON), overwrite=True)
    info = {
        f"num_{split}_examples": len(windowed),
        f"num_{split}_questions": len(examples),
        **shapes,
    }
    return finish_split(output_dir, info, tokens)


# ---------------------------------------------------------------- command line


def define_flags() -> None:
    """Defines the converter's flags (only when run as a program, so importing it is side-free)."""
    flags.DEFINE_string("input", None, "SQuAD v1.1 JSON file (train-v1.1.json, dev-v1.1.json).")
    flags.DEFINE_string("vocab", None, "WordPiece vocabulary file of the model to fine-tune.")
    flags.DEFINE_string("output_dir", None, "Where the TFRecord shards are written.")
    flags.DEFINE_enum("split", "train", SPLITS, "Split written: train or validation.")
    flags.DEFINE_integer("num_shards", 1, "Number of <split>-*-of-* TFRecord files.")
    defaults = Windows()
    flags.DEFINE_integer("max_seq_length", defaults.max_seq_length, "Tokens per window.")
    flags.DEFINE_integer(
        "doc_stride", defaults.doc_stride, "Tokens between the starts of a context's windows."
    )
    flags.DEFINE_integer(
        "max_query_length", defaults.max_query_length, "A longer question is cut to this."
    )
    flags.DEFINE_bool(
        "do_lower_case", defaults.do_lower_case, "Lower-case (uncased models); --nodo_lower_case."
    )


def main(argv: list[str]) -> None:
    """Converts with the parsed flags and prints what was written."""
    f = flags.FLAGS
    require_flags(argv, "input", "vocab", "output_dir")
    logging.set_verbosity(logging.WARNING)  # Model Garden's featuriser logs its first 20
    start = time.monotonic()
    windows = Windows(**{name: f[name].value for name in WINDOW_FLAGS})
    info = convert(f.input, f.vocab, f.output_dir, f.split, windows, f.num_shards, progress=True)
    print(
        f"wrote {info[f'num_{f.split}_examples']} {f.split} windows of "
        f"{info[f'num_{f.split}_questions']} questions to {f.output_dir} "
        f"({time.monotonic() - start:.1f} s)"
    )


if __name__ == "__main__":
    define_flags()
    run_app(main)
