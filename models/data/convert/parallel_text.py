"""Writes translation TFRecords from parallel text: plain UTF-8 files, one sentence a line, line
i of --source translated by line i of --target (WMT's releases once their SGML is stripped,
Europarl, ...). One tf.train.Example per sentence pair holds the raw text of each side under its
language code (`en`, `de`: the features of TFDS's wmt14_translate, which Model Garden's
WMTDataLoader reads) and `unique_id`, the pair's index in its split; models tokenise in the
graph (models.data.translation). Beside the shards: one SentencePiece model shared by both
languages (sentencepiece.model: given, or learned from both sides of the split), which Model
Garden's translation task reads too (`task.sentencepiece_model_path`), and dataset_info.json
with the counts and token lengths.

A model learned here has Model Garden's ids (its train_sentencepiece.py): <pad> 0 (which
Seq2SeqTransformer masks), </s> 1 (end of sequence), <unk> 2, no begin-of-sequence token. It
keeps text as it is (no NFKC normalisation, runs of spaces kept) and spells a character it lacks
in UTF-8 byte tokens, so detokenising gives back exactly the text tokenised: what sacreBLEU must
score. It is learned deterministically (fixed sample seed and thread count).

Usage: python -m models.data.convert.parallel_text --source=train.en --target=train.de
    --output_dir=OUT (--sentencepiece_model=PATH | --vocab_size=8000 [--model_type=unigram])
    [--split=train|validation|test --max_length=128 --long=error|drop --source_language=en
    --target_language=de --num_shards=8]
"""

from __future__ import annotations

import io
import itertools
import os
import re
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from absl import flags

from models.core.errors import UsageError, require_flags, run_app
from models.data.convert.text_output import (
    check_shapes,
    check_split_absent,
    merge_info,
    staged_shards,
)
from models.data.convert.vocab import text_files

SPLITS = ("train", "validation", "test")
LONG = ("error", "drop")  # what a pair longer than --max_length does
UNIQUE_ID = "unique_id"  # the pair's index in its split (Model Garden's evaluation records')
LANGUAGE = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,31}")  # a feature name: en, de, pt-BR, zh_Hans
FILE_LANGUAGE = re.compile(r"[a-z]{2,3}")  # the suffix of WMT's file names: train.en
NOT_LANGUAGES = frozenset({"txt", "tok", "raw", "sgm", "xml", "tsv", "csv", "gz", "bz2", "xz"})
TOKENIZE_LINES = 4096  # sentences tokenised at once while measuring

MODEL_FILE = "sentencepiece.model"  # beside the records, the model that tokenises them
PAD_ID, EOS_ID, UNK_ID = 0, 1, 2  # Model Garden's; Seq2SeqTransformer masks id 0
MODEL_TYPES = ("unigram", "bpe")
BYTE_TOKENS = 256  # byte fallback's <0x00> ... <0xFF>
MIN_VOCAB_SIZE = 3 + BYTE_TOKENS + 1  # the special and byte tokens, and a character
LEARN_SENTENCES = 2_000_000  # sentences (both sides) a model is learned from; more are sampled
LEARN_SEED = 12345  # the sample's
LEARN_THREADS = 16  # SentencePiece's default, fixed: another count learns another model
# tensorflow-text's copy of SentencePiece logs a line wherever it loads a model whose
# normalisation table is empty (identity); a rule for a Unicode noncharacter, which text never
# holds, fills the table and changes nothing else.
NORMALIZATION_RULES = "FDD0\tFFFD\n"


@dataclass(frozen=True)
class Lengths:
    """How long a pair may be: `max_length` tokens a side, the end-of-sequence token included
    (the models' static sequence length); a longer pair is an error, or dropped and counted."""

    max_length: int = 128
    long: str = "error"

    def check(self) -> None:
        if self.max_length < 2:
            raise UsageError(f"--max_length must be at least 2, got {self.max_length}")
        if self.long not in LONG:
            raise UsageError(f"--long must be error or drop, got '{self.long}'")


@dataclass(frozen=True)
class Line:
    """Where a sentence pair comes from: line `number` of both files."""

    source: str
    target: str
    number: int


def pair_languages(
    sources: Sequence[str], targets: Sequence[str], source: str | None, target: str | None
) -> tuple[str, str]:
    """The records' feature names of the two sides: --source_language / --target_language, else
    the language code that every file of the side ends in (train.en: en)."""
    found = []
    for side, given, files in (("source", source, sources), ("target", target, targets)):
        if not given:
            suffixes = {os.path.splitext(path)[1][1:] for path in files}
            suffix = next(iter(suffixes))
            if len(suffixes) != 1 or not FILE_LANGUAGE.fullmatch(suffix) or suffix in NOT_LANGUAGES:
                raise UsageError(
                    f"--{side}_language is not set and the --{side} files do not all end in one "
                    f"language code like train.en ({', '.join(files[:3])}); set it"
                )
            given = suffix
        if not LANGUAGE.fullmatch(given) or given == UNIQUE_ID:
            raise UsageError(
                f"--{side}_language '{given}' is not a language code like en, de or pt-BR"
            )
        found.append(given)
    if found[0] == found[1]:
        raise UsageError(f"--source_language and --target_language are both '{found[0]}'")
    return found[0], found[1]


def paired_files(sources: Sequence[str], targets: Sequence[str]) -> list[tuple[str, str]]:
    """(source, target) files, paired in order; UsageError when the lists differ in length."""
    if len(sources) != len(targets):
        raise UsageError(
            f"--source names {len(sources)} file(s) and --target {len(targets)}; "
            "they pair up in order, so give as many of each"
        )
    return list(zip(sources, targets, strict=True))


def _lines(path: str) -> Iterator[str]:
    """The file's lines, stripped (a byte-order mark too); UsageError naming the line that is
    not UTF-8."""
    import tensorflow as tf

    with tf.io.gfile.GFile(path, "rb") as file:
        for number, line in enumerate(file, start=1):
            try:
                yield line.decode("utf-8-sig" if number == 1 else "utf-8").strip()
            except UnicodeDecodeError:
                raise UsageError(f"{path}:{number} is not UTF-8 text") from None


def read_pairs(files: Sequence[tuple[str, str]]) -> Iterator[tuple[str, str, Line]]:
    """(source sentence, target sentence, where) of every line pair, file pair by file pair;
    UsageError for an empty line or files of unequal line counts (naming both counts)."""
    for source, target in files:
        source_lines, target_lines = _lines(source), _lines(target)
        number = 0
        for number, (source_text, target_text) in enumerate(
            itertools.zip_longest(source_lines, target_lines), start=1
        ):
            if source_text is None or target_text is None:
                # One file has ended; count the rest of the other (the ended one yields none).
                longer = number + sum(1 for _ in source_lines) + sum(1 for _ in target_lines)
                counts = (longer, number - 1) if target_text is None else (number - 1, longer)
                raise UsageError(
                    f"--source {source} has {counts[0]} lines but --target {target} has "
                    f"{counts[1]}; line i of one must be the translation of line i of the other"
                )
            for path, text in ((source, source_text), (target, target_text)):
                if not text:
                    raise UsageError(
                        f"{path}:{number} is empty; every line of --source and --target must "
                        "hold a sentence, the translation of the same line of the other file"
                    )
            yield source_text, target_text, Line(source, target, number)
        if number == 0:
            raise UsageError(f"--source {source} and --target {target} hold no lines")


# ---------------------------------------------------------------- the SentencePiece model


@dataclass(frozen=True)
class Pieces:
    """What the data needs to know of a SentencePiece model: its size, ids, and which ids are
    byte tokens (a character the model lacks, spelled in UTF-8 bytes)."""

    vocab_size: int
    pad_id: int
    eos_id: int
    unk_id: int
    byte: np.ndarray  # bool [vocab_size]


def learn_sentencepiece(
    files: Sequence[tuple[str, str]], vocab_size: int, model_type: str = "unigram"
) -> bytes:
    """A SentencePiece model of up to `vocab_size` tokens learned from both sides of the pairs
    (a sample of LEARN_SENTENCES sentences where they hold more), serialised; UsageError when
    vocab_size cannot hold the special and byte tokens and the text's characters."""
    import sentencepiece
    from sentencepiece import sentencepiece_model_pb2

    if model_type not in MODEL_TYPES:
        raise UsageError(f"--model_type must be unigram or bpe, got '{model_type}'")
    if vocab_size < MIN_VOCAB_SIZE:
        raise UsageError(
            f"--vocab_size must be at least {MIN_VOCAB_SIZE} (3 special and {BYTE_TOKENS} byte "
            f"tokens, then the text's), got {vocab_size}"
        )
    sentences = (text for pair in read_pairs(files) for text in pair[:2])
    model = io.BytesIO()
    with tempfile.TemporaryDirectory(prefix="sentencepiece-") as folder:
        rules = os.path.join(folder, "rules.tsv")
        with open(rules, "w", encoding="utf-8") as file:
            file.write(NORMALIZATION_RULES)
        sentencepiece.set_random_generator_seed(LEARN_SEED)
        try:
            sentencepiece.SentencePieceTrainer.train(
                sentence_iterator=sentences,
                model_writer=model,
                model_type=model_type,
                vocab_size=vocab_size,
                hard_vocab_limit=False,  # fewer tokens where the text has no more
                pad_id=PAD_ID,
                eos_id=EOS_ID,
                unk_id=UNK_ID,
                bos_id=-1,
                byte_fallback=True,
                normalization_rule_tsv=rules,
                remove_extra_whitespaces=False,
                input_sentence_size=LEARN_SENTENCES,
                shuffle_input_sentence=True,
                num_threads=LEARN_THREADS,
                minloglevel=2,
            )
        except RuntimeError as error:
            sizes = re.search(r"required_chars\. (\d+) vs (\d+)", str(error))
            if not sizes:
                raise
            raise UsageError(
                f"--vocab_size {vocab_size} is too small for the characters of --source and "
                f"--target: SentencePiece needs at least {sizes[2]}"
            ) from None
    # The model keeps its training settings; the rules' file was a temporary one.
    proto = sentencepiece_model_pb2.ModelProto.FromString(model.getvalue())
    proto.normalizer_spec.ClearField("normalization_rule_tsv")
    return proto.SerializeToString(deterministic=True)


def read_sentencepiece(path: str) -> bytes:
    """The serialised model in path; UsageError when there is no such file."""
    import tensorflow as tf

    if not tf.io.gfile.exists(path) or tf.io.gfile.isdir(path):
        raise UsageError(f"SentencePiece model {path} is not a file")
    with tf.io.gfile.GFile(path, "rb") as file:
        return file.read()


def check_sentencepiece(model: bytes, source: str) -> Pieces:
    """The model's Pieces; UsageError naming `source` when it is no SentencePiece model, or one
    that does not pad with id 0 (what the models mask) or has no end-of-sequence token."""
    import sentencepiece

    processor = sentencepiece.SentencePieceProcessor()
    try:
        processor.LoadFromSerializedProto(model)
    except RuntimeError:
        raise UsageError(f"{source} is not a SentencePiece model") from None
    if processor.pad_id() != PAD_ID or processor.eos_id() < 0:
        raise UsageError(
            f"SentencePiece model {source} has pad id {processor.pad_id()} and end-of-sequence "
            f"id {processor.eos_id()} (-1: none); translation models pad with id {PAD_ID} and end "
            "with </s>: learn one with --vocab_size (Model Garden's ids: pad 0, eos 1, unk 2)"
        )
    size = processor.get_piece_size()
    return Pieces(
        vocab_size=size,
        pad_id=processor.pad_id(),
        eos_id=processor.eos_id(),
        unk_id=processor.unk_id(),
        byte=np.array([processor.is_byte(index) for index in range(size)]),
    )


def sentencepiece_tokenizer(model: bytes):
    """tensorflow-text's SentencepieceTokenizer of the serialised model (int32 ids, no
    end-of-sequence token): what the input pipeline tokenises with, in the graph."""
    import tensorflow as tf
    import tensorflow_text

    return tensorflow_text.SentencepieceTokenizer(model=model, out_type=tf.int32)


def shared_model(
    files: Sequence[tuple[str, str]],
    output_dir: str,
    given: str | None,
    vocab_size: int | None,
    model_type: str = "unigram",
) -> tuple[bytes, str]:
    """(the shared model, where it comes from): --sentencepiece_model's, else one of about
    --vocab_size tokens learned from both sides of the split, else the output folder's own
    (written with its first split); UsageError when there is none."""
    import tensorflow as tf

    if given and vocab_size:
        raise UsageError(
            "give --sentencepiece_model (a model) or --vocab_size (learn one), not both"
        )
    if vocab_size:
        return learn_sentencepiece(files, vocab_size, model_type), "the model learned"
    folder_model = os.path.join(output_dir, MODEL_FILE)
    if not given and tf.io.gfile.exists(folder_model):
        given = folder_model
    if not given:
        raise UsageError(
            "--sentencepiece_model (a SentencePiece model) or --vocab_size (learn one from both "
            f"sides of this split) is required: {output_dir} holds no {MODEL_FILE} yet"
        )
    return read_sentencepiece(given), given


def prepare_output_dir(output_dir: str, model: bytes, shapes: dict[str, Any]) -> None:
    """Creates output_dir; UsageError, before anything is written, when its splits were made
    with another SentencePiece model or other shapes."""
    import tensorflow as tf

    tf.io.gfile.makedirs(output_dir)
    existing = os.path.join(output_dir, MODEL_FILE)
    if tf.io.gfile.exists(existing) and read_sentencepiece(existing) != model:
        raise UsageError(
            f"--output_dir {output_dir} holds splits made with another SentencePiece model "
            f"({existing})"
        )
    check_shapes(output_dir, shapes)


def write_model(output_dir: str, model: bytes) -> None:
    """output_dir/sentencepiece.model, written atomically, unless it is there."""
    import tensorflow as tf

    path = os.path.join(output_dir, MODEL_FILE)
    if not tf.io.gfile.exists(path):
        with tf.io.gfile.GFile(f"{path}.partial", "wb") as file:
            file.write(model)
        tf.io.gfile.rename(f"{path}.partial", path, overwrite=True)


# ---------------------------------------------------------------- measuring


@dataclass
class Side:
    """One side's sentences as the input pipeline tokenises them, a numpy array per batch of
    each per-sentence count."""

    lengths: list[np.ndarray] = field(default_factory=list)  # the end of sequence included
    unknown: list[np.ndarray] = field(default_factory=list)  # <unk> (byte fallback has none)
    byte: list[np.ndarray] = field(default_factory=list)  # byte tokens
    exact: list[np.ndarray] = field(default_factory=list)  # detokenises to itself

    def add(self, tokenizer, texts: list[str], pieces: Pieces) -> None:
        import tensorflow as tf

        ids = tokenizer.tokenize(tf.constant(texts))
        self.lengths.append(ids.row_lengths().numpy().astype(np.int32) + 1)
        flat, rows = ids.flat_values.numpy(), ids.value_rowids().numpy()
        for counts, wanted in (
            (self.unknown, flat == pieces.unk_id),
            (self.byte, pieces.byte[flat]),
        ):
            counts.append(np.bincount(rows, wanted, minlength=len(texts)))
        back = tokenizer.detokenize(ids).numpy()
        self.exact.append(np.array([a == b.encode() for a, b in zip(back, texts, strict=True)]))


def measure(
    files: Sequence[tuple[str, str]], model: bytes, pieces: Pieces, lengths: Lengths, bar
) -> tuple[Side, Side, np.ndarray]:
    """(source, target, which pairs are kept): tokenises every pair as the input pipeline will
    (tensorflow-text's SentencepieceTokenizer) to count its tokens and check that it comes back
    from them; UsageError naming the first pair over max_length unless they are dropped."""
    tokenizer = sentencepiece_tokenizer(model)
    sides, keeps = (Side(), Side()), []
    pairs = read_pairs(files)
    while batch := list(itertools.islice(pairs, TOKENIZE_LINES)):
        for index, side in enumerate(sides):
            side.add(tokenizer, [pair[index] for pair in batch], pieces)
        counts = [side.lengths[-1] for side in sides]
        keep = np.maximum(*counts) <= lengths.max_length
        if lengths.long == "error" and not keep.all():
            index = int(np.argmin(keep))
            where, longer = batch[index][2], int(counts[1][index] > counts[0][index])
            path = (where.source, where.target)[longer]
            raise UsageError(
                f"{path}:{where.number} is {counts[longer][index]} tokens long with the "
                f"end-of-sequence token, over --max_length {lengths.max_length}; raise "
                "--max_length, or drop such pairs with --long=drop"
            )
        keeps.append(keep)
        bar.update(len(batch))
    return sides[0], sides[1], np.concatenate(keeps)


def statistics(side: Side, keep: np.ndarray) -> dict[str, float]:
    """Of one side's kept sentences: token counts, end-of-sequence tokens included, the shares
    of unknown and byte tokens, and of sentences that detokenise exactly (with a model learned
    here, all)."""
    lengths, unknown, byte, exact = (
        np.concatenate(values)[keep]
        for values in (side.lengths, side.unknown, side.byte, side.exact)
    )
    tokens = int(lengths.sum())
    return {
        "tokens": tokens,
        "mean": round(float(lengths.mean()), 2),
        "median": float(np.median(lengths)),
        "p95": float(np.percentile(lengths, 95)),
        "max": int(lengths.max()),
        "unknown_fraction": round(float(unknown.sum()) / tokens, 5),
        "byte_fraction": round(float(byte.sum()) / tokens, 5),
        "exact_round_trip": round(float(exact.mean()), 5),
    }


def example(source: str, target: str, languages: tuple[str, str], unique_id: int) -> bytes:
    """One serialised tf.train.Example: both sentences' UTF-8 under their language codes."""
    import tensorflow as tf

    def text(value: str) -> tf.train.Feature:
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value.encode("utf-8")]))

    feature = {
        languages[0]: text(source),
        languages[1]: text(target),
        UNIQUE_ID: tf.train.Feature(int64_list=tf.train.Int64List(value=[unique_id])),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString(
        deterministic=True
    )


def convert(
    sources: Sequence[str],
    targets: Sequence[str],
    output_dir: str,
    split: str = "train",
    sentencepiece_model: str | None = None,
    vocab_size: int | None = None,
    lengths: Lengths = Lengths(),
    languages: tuple[str | None, str | None] = (None, None),
    num_shards: int = 1,
    model_type: str = "unigram",
    progress: bool = False,
) -> dict[str, Any]:
    """Writes `<split>-%05d-of-%05d` shards of the kept pairs (in file order, dealt round the
    shards; `unique_id` counts them from 0), the SentencePiece model with the first split, and
    merges the split into dataset_info.json. Every check (line counts, empty lines, model,
    lengths) runs before a shard is written, and no shard is visible before all are. Returns
    the info written."""
    import tensorflow as tf
    from tqdm import tqdm

    if split not in SPLITS:
        raise UsageError(f"--split must be train, validation or test, got '{split}'")
    if num_shards < 1:
        raise UsageError(f"--num_shards must be at least 1, got {num_shards}")
    lengths.check()
    files = paired_files(sources, targets)
    codes = pair_languages(sources, targets, *languages)
    check_split_absent(output_dir, split)
    with tqdm(desc="checking", unit=" lines", disable=not progress, delay=1) as bar:
        for _ in read_pairs(files):
            bar.update()
    model, origin = shared_model(files, output_dir, sentencepiece_model, vocab_size, model_type)
    pieces = check_sentencepiece(model, origin)
    shapes = {
        "vocab_size": pieces.vocab_size,
        "max_length": lengths.max_length,
        "source_language": codes[0],
        "target_language": codes[1],
        "eos_id": pieces.eos_id,
        "pad_id": pieces.pad_id,
    }
    prepare_output_dir(output_dir, model, shapes)
    with tqdm(desc="tokenizing", unit=" pairs", disable=not progress, delay=1) as bar:
        source, target, keep = measure(files, model, pieces, lengths, bar)
    kept = int(keep.sum())
    if kept == 0:
        raise UsageError(
            f"every pair of --source {', '.join(sources[:3])} is over --max_length "
            f"{lengths.max_length} tokens; raise it"
        )
    shards = min(num_shards, kept)
    with staged_shards(output_dir, split, shards) as paths:
        writers = [tf.io.TFRecordWriter(path) for path in paths]
        try:
            written = 0
            pairs = read_pairs(files)
            for (source_text, target_text, _), wanted in zip(
                tqdm(pairs, desc="writing", unit=" pairs", disable=not progress, delay=1),
                keep,
                strict=True,
            ):
                if wanted:
                    record = example(source_text, target_text, codes, written)
                    writers[written % shards].write(record)
                    written += 1
        finally:
            for writer in writers:
                writer.close()
    longer = np.maximum(np.concatenate(source.lengths), np.concatenate(target.lengths))
    info = {
        f"num_{split}_examples": kept,
        f"{split}_statistics": {
            "source_files": list(sources),
            "target_files": list(targets),
            "dropped_long": int(keep.size - kept),
            # what a batch of buckets padded to the longer side costs: its token budget's unit
            "pair_tokens": int(longer[keep].sum()),
            "source": statistics(source, keep),
            "target": statistics(target, keep),
        },
        **shapes,
    }
    write_model(output_dir, model)
    return merge_info(output_dir, info)


# ---------------------------------------------------------------- command line


def define_flags() -> None:
    """Defines the converter's flags (only when run as a program, so importing it is side-free)."""
    flags.DEFINE_list(
        "source",
        None,
        "Source-language text files or glob patterns, comma-separated: one sentence a line.",
    )
    flags.DEFINE_list(
        "target",
        None,
        "Their translations, file for file (in the same order; each pattern's files sorted), "
        "line for line.",
    )
    flags.DEFINE_string("output_dir", None, "Where the TFRecord shards are written.")
    flags.DEFINE_string(
        "sentencepiece_model",
        None,
        "SentencePiece model shared by both languages (pad id 0, an end-of-sequence token); "
        f"default: the --output_dir's {MODEL_FILE}, written with its first split.",
    )
    flags.DEFINE_integer(
        "vocab_size",
        None,
        "Instead of --sentencepiece_model: learn a shared SentencePiece model of this many "
        "tokens from both sides of this split (e.g. 8000; Google's WMT models: 32000).",
    )
    flags.DEFINE_enum(
        "model_type", "unigram", MODEL_TYPES, "The algorithm --vocab_size learns with."
    )
    flags.DEFINE_enum("split", "train", SPLITS, "Split written: shards <split>-*-of-*.")
    defaults = Lengths()
    flags.DEFINE_integer(
        "max_length",
        defaults.max_length,
        "Tokens a sentence may have, its end-of-sequence token included: the models' sequence "
        "length.",
    )
    flags.DEFINE_enum(
        "long", defaults.long, LONG, "A pair longer than --max_length: error, or drop it (counted)."
    )
    flags.DEFINE_string(
        "source_language", None, "Feature name of the source text; default: the files' suffix."
    )
    flags.DEFINE_string(
        "target_language", None, "Feature name of the target text; default: the files' suffix."
    )
    flags.DEFINE_integer("num_shards", 1, "Number of <split>-*-of-* TFRecord files.")


def main(argv: list[str]) -> None:
    """Converts with the parsed flags and prints what was written."""
    f = flags.FLAGS
    require_flags(argv, "source", "target", "output_dir")
    start = time.monotonic()
    info = convert(
        text_files(f.source, "source"),
        text_files(f.target, "target"),
        f.output_dir,
        f.split,
        f.sentencepiece_model,
        f.vocab_size,
        Lengths(f.max_length, f.long),
        (f.source_language, f.target_language),
        f.num_shards,
        f.model_type,
        progress=True,
    )
    stats = info[f"{f.split}_statistics"]
    dropped = stats["dropped_long"]
    print(
        f"wrote {info[f'num_{f.split}_examples']} {f.split} pairs "
        f"({info['source_language']}-{info['target_language']}; "
        f"{stats['source']['mean']:g} / {stats['target']['mean']:g} tokens a sentence on average"
        + (f"; dropped {dropped} longer than {f.max_length} tokens" if dropped else "")
        + f") and a SentencePiece model of {info['vocab_size']} tokens to {f.output_dir} "
        f"({time.monotonic() - start:.1f} s)"
    )


def read_split(files: Sequence[str], languages: tuple[str, str]) -> tuple[list[str], list[str]]:
    """(source sentences, target sentences) of a split's records, in unique_id order."""
    from models.data.records import texts_by_id

    return texts_by_id(files, languages, UNIQUE_ID)


if __name__ == "__main__":
    define_flags()
    run_app(main)
