"""Parallel-text records (models.data.convert.parallel_text; TFDS's WMT schema: each side's raw
text under its language code) -> per-replica batches for Model Garden's Seq2SeqTransformer,
tokenised inside the input graph by tensorflow-text's SentencepieceTokenizer with the folder's
shared SentencePiece model (sentencepiece.model, as Model Garden's translation task does), each
sequence ended by the model's end-of-sequence id (dataset_info.json's `eos_id`; 1 in a model the
converter learns) and padded with id 0, which the model masks.

Training batches hold a budget of tokens, as Google's Transformer recipes (Tensor2Tensor, Model
Garden) do: a batch of B holds B x max_length padded tokens a side, the tokens of B pairs of the
longest length (so slices and recipes count batches as every family does, and a TPU's one static
shape [B, max_length] is B pairs: MLPerf's sentence batches). Pairs of similar length share a bucket
(the longer side decides); bucket k's batches have the static shape [B x max_length // L_k, L_k],
both sides padded to the bucket's length L_k (tf.data's pad-to-bucket-boundary), so XLA compiles one
program per bucket; `bucket_lengths = ()` pads every batch to max_length: one shape, Model Garden's
`static_batch`, for TPUs. (Model Garden's own WMTDataLoader pads a bucket's batch to its longest
pair, a shape per batch, or everything to max_length.) Evaluation batches hold `global_batch_size`
pairs padded to max_length: every pair once, then padding pairs of unique_id -1 (static shapes).

A batch is {"inputs", "targets": int32 [batch, length]; "input_mask", "target_mask": 1 on
tokens, 0 on padding}; evaluation's also "unique_id" [batch], which indexes the raw source and
reference sentences of `evaluation_set(split)`. sacreBLEU scores text: `detokenize` turns the
model's ids back into it, exactly as the sentences were (the converter's models keep text as it
is and spell unknown characters in bytes)."""

from __future__ import annotations

import os
from collections.abc import Sequence

import gin
import numpy as np
import tensorflow as tf

from models.core.errors import UsageError, nearest
from models.data.convert.parallel_text import (
    MODEL_FILE,
    SPLITS,
    UNIQUE_ID,
    check_sentencepiece,
    read_sentencepiece,
    read_split,
    sentencepiece_tokenizer,
)
from models.data.folder import DataFolder
from models.data.imagenet_schema import INFO_FILE
from models.data.reader import InputReader, constant_padding
from models.data.records import check_parses, find_files

PAD_ID = -1  # unique_id of evaluation's padding pairs
SMALLEST_BUCKET = 16  # default buckets: 16, 32, 64, ... up to max_length
TOKENIZE_BATCH = 256  # records tokenised at once
_AUTOTUNE = tf.data.AUTOTUNE


def default_buckets(max_length: int) -> tuple[int, ...]:
    """Bucket lengths doubling from SMALLEST_BUCKET, the last max_length: few shapes to compile
    (Tensor2Tensor's 10% steps give ~25 below 64 tokens)."""
    lengths, length = [], SMALLEST_BUCKET
    while length < max_length:
        lengths.append(length)
        length *= 2
    return (*lengths, max_length)


def check_buckets(bucket_lengths: Sequence[int], max_length: int) -> tuple[int, ...]:
    """The bucket lengths, increasing and ending at max_length (appended when missing);
    UsageError for lengths that are not increasing, below 2 or over max_length."""
    lengths = tuple(int(length) for length in bucket_lengths)
    if any(b <= a for a, b in zip(lengths, lengths[1:], strict=False)) or (
        lengths and (lengths[0] < 2 or lengths[-1] > max_length)
    ):
        raise UsageError(
            f"translation_input.bucket_lengths {list(lengths)} must increase from at least 2 "
            f"to at most max_length {max_length}"
        )
    return lengths if lengths and lengths[-1] == max_length else (*lengths, max_length)


def detokenize(
    ids: np.ndarray | Sequence[Sequence[int]], tokenizer, eos_id: int, pad_id: int = 0
) -> list[str]:
    """Text of each row of token ids, up to its first end-of-sequence id, padding left out,
    detokenised by `tokenizer` (a tensorflow-text SentencepieceTokenizer)."""
    rows = []
    for row in ids:
        row = np.asarray(row, np.int32)
        ends = np.flatnonzero(row == eos_id)
        row = row[: ends[0]] if ends.size else row
        rows.append(row[row != pad_id])
    if not rows:
        return []
    values = np.concatenate(rows).astype(np.int32)
    ragged = tf.RaggedTensor.from_row_lengths(values, [len(row) for row in rows])
    texts = tokenizer.detokenize(ragged).numpy()
    return [text.decode("utf-8", errors="replace") for text in texts]


@gin.configurable("translation_input")
class TranslationInput(DataFolder):
    """Per-replica translation batches: the built-in `pg_messages` (PostgreSQL's English-German
    messages) by default, the parallel-text converter's records with --data_dir."""

    info_integers = ("max_length", "vocab_size", "eos_id", "pad_id")
    info_writer = "python -m models.data.convert.parallel_text"

    def __init__(
        self,
        data_dir: str | None = None,
        builtin: str = "pg_messages",
        max_length: int | None = None,
        bucket_lengths: Sequence[int] | None = None,
        shuffle_buffer: int = 10000,
    ):
        super().__init__(data_dir, builtin)
        self._max_length = max_length
        self._bucket_lengths = bucket_lengths
        self.shuffle_buffer = shuffle_buffer
        self._model: bytes | None = None
        self._tokenizer = None
        self._eval: dict[str, tuple[list[str], list[str]]] = {}

    def files(self, split: str) -> list[str]:
        if split not in SPLITS:
            raise UsageError(
                f"unknown split '{split}'{nearest(split, SPLITS)}; expected {', '.join(SPLITS)}"
            )
        return find_files(self.data_dir, f"{split}-*-of-*", split)

    def dataset_info(self) -> dict:
        """data_dir/dataset_info.json, read once; UsageError when absent or without the
        languages, lengths and ids the converter writes there."""
        info, path = super().dataset_info(), os.path.join(self.data_dir, INFO_FILE)
        for key in ("source_language", "target_language", *self.info_integers):
            if key not in info:
                raise UsageError(f"{path} has no {key}; write the data with the converter")
        return info

    @property
    def languages(self) -> tuple[str, str]:
        """(source, target) language codes: the records' feature names."""
        info = self.dataset_info()
        return info["source_language"], info["target_language"]

    @property
    def max_length(self) -> int:
        """The padded length of evaluation and of the longest bucket: translation_input's
        max_length, else the data's."""
        return int(self._max_length or self.dataset_info()["max_length"])

    @property
    def bucket_lengths(self) -> tuple[int, ...]:
        """Padded lengths of the training buckets, the last max_length."""
        if self._bucket_lengths is None:
            return default_buckets(self.max_length)
        return check_buckets(self._bucket_lengths, self.max_length)

    @property
    def eos_id(self) -> int:
        return int(self.dataset_info()["eos_id"])

    @property
    def pad_id(self) -> int:
        return int(self.dataset_info()["pad_id"])

    def sentencepiece_model(self) -> bytes:
        """The records' shared SentencePiece model (data_dir/sentencepiece.model), read once."""
        if self._model is None:
            self._model = read_sentencepiece(self._converted(MODEL_FILE))
        return self._model

    def _converted(self, name: str) -> str:
        """data_dir/name; UsageError when the converter has not written it there."""
        path = os.path.join(self.data_dir, name)
        if not tf.io.gfile.exists(path):
            raise UsageError(
                f"--data_dir {self.data_dir} has no {name}: write the data with "
                "python -m models.data.convert.parallel_text"
            )
        return path

    def tokenizer(self):
        """tensorflow-text's SentencepieceTokenizer of the model (int32 ids, no end of
        sequence), made once."""
        if self._tokenizer is None:
            self._tokenizer = sentencepiece_tokenizer(self.sentencepiece_model())
        return self._tokenizer

    def vocab_size(self) -> int:
        return int(self.dataset_info()["vocab_size"])

    def num_examples(self, split: str) -> int:
        """Sentence pairs in split."""
        key = f"num_{split}_examples"
        if split not in SPLITS or key not in self.dataset_info():
            raise UsageError(f"{os.path.join(self.data_dir, INFO_FILE)} has no {key}")
        return int(self.dataset_info()[key])

    def num_tokens(self, split: str) -> int:
        """Tokens of split as a token budget counts them: each pair's longer side, its
        end-of-sequence token included (an epoch of token batches, before padding)."""
        self.num_examples(split)
        return int(self.dataset_info()[f"{split}_statistics"]["pair_tokens"])

    def detokenize(self, ids: np.ndarray | Sequence[Sequence[int]]) -> list[str]:
        """Target-language text of token ids (the model's translations), for sacreBLEU."""
        return detokenize(ids, self.tokenizer(), self.eos_id, self.pad_id)

    def evaluation_set(self, split: str) -> tuple[list[str], list[str]]:
        """(source sentences, reference translations) of split, indexed by unique_id, read
        once: what the translations of evaluation batches are scored against."""
        if split not in self._eval:
            self._eval[split] = read_split(self.files(split), self.languages)
        return self._eval[split]

    # ------------------------------------------------------------ datasets

    def reader(self, split: str) -> InputReader:
        """Pairs tokenised a batch of records at a time: training endless, shuffled and
        bucketed by length (a batch of B: B x max_length tokens), evaluation every pair once
        and then padding pairs (B pairs); each batch with its padding masks."""
        training = split == "train"
        padding = _int32({"inputs": [], "targets": [], UNIQUE_ID: PAD_ID})
        return InputReader(
            parse=self._tokenize_records(training),
            parse_batch=TOKENIZE_BATCH,
            padding=constant_padding(padding),
            batch=self._token_batches if training else self._evaluation_batches,
            shuffle_buffer=self.shuffle_buffer,
        )

    def _evaluation_batches(self, pairs: tf.data.Dataset, batch_size: int) -> tf.data.Dataset:
        shapes = {"inputs": [self.max_length], "targets": [self.max_length], UNIQUE_ID: []}
        batches = pairs.padded_batch(batch_size, shapes, drop_remainder=True)
        return batches.map(_with_masks, num_parallel_calls=_AUTOTUNE)

    def _tokenize_records(self, training: bool):
        """A batch of serialised records -> {"inputs", "targets": int32 ragged [pairs,
        (tokens)] ending in the end-of-sequence id} (evaluation: and "unique_id"); evaluation
        cuts a longer side to max_length, its end-of-sequence token kept, as Model Garden does."""
        tokenizer = self.tokenizer()
        schema = {
            **{language: tf.io.FixedLenFeature([], tf.string) for language in self.languages},
            UNIQUE_ID: tf.io.FixedLenFeature([], tf.int64),
        }
        eos, max_length = self.eos_id, self.max_length

        def tokenize(records: tf.Tensor) -> dict[str, tf.Tensor]:
            parsed = tf.io.parse_example(records, schema)
            features = {}
            for name, language in zip(("inputs", "targets"), self.languages, strict=True):
                ids = tokenizer.tokenize(parsed[language])
                if not training:
                    ids = ids[:, : max_length - 1]
                ends = tf.fill([ids.nrows(), 1], eos)
                features[name] = tf.concat([ids, tf.RaggedTensor.from_tensor(ends)], axis=1)
            if not training:
                features[UNIQUE_ID] = tf.cast(parsed[UNIQUE_ID], tf.int32)
            return features

        return tokenize

    def _token_batches(self, pairs: tf.data.Dataset, batch_size: int) -> tf.data.Dataset:
        """Pairs within max_length (a longer one, only where max_length is below the data's,
        is left out, as Model Garden does) in batches of up to batch_size x max_length padded
        tokens a side, by bucket, with their masks."""
        return self._bucketed(pairs, batch_size * self.max_length).map(
            _with_masks, num_parallel_calls=_AUTOTUNE
        )

    def _bucketed(self, pairs: tf.data.Dataset, tokens: int) -> tf.data.Dataset:
        lengths = self.bucket_lengths
        sizes = [tokens // length for length in lengths]
        max_length = self.max_length

        def longer_side(pair: dict[str, tf.Tensor]) -> tf.Tensor:
            return tf.maximum(tf.size(pair["inputs"]), tf.size(pair["targets"]))

        pairs = pairs.filter(lambda pair: longer_side(pair) <= max_length)
        if len(lengths) == 1:  # one static shape, known to the dataset's element_spec
            shapes = {"inputs": [max_length], "targets": [max_length]}
            return pairs.padded_batch(sizes[0], shapes, drop_remainder=True)
        return pairs.bucket_by_sequence_length(
            longer_side,
            bucket_boundaries=[length + 1 for length in lengths],  # bucket k: (L_k-1, L_k]
            bucket_batch_sizes=[*sizes, 1],  # the last bucket (over max_length) stays empty
            pad_to_bucket_boundary=True,
            drop_remainder=True,
        )

    # ------------------------------------------------------------ validation

    def validate(self, splits: Sequence[str] = ("train", "validation")) -> None:
        """Cheap pre-flight checks, one line each: dataset_info.json, a SentencePiece model of
        its size and ids, sequences no longer than translation_input.max_length, and the first
        records of every shard hold both languages' text."""
        info, path = self.dataset_info(), os.path.join(self.data_dir, INFO_FILE)
        model = os.path.join(self.data_dir, MODEL_FILE)
        pieces = check_sentencepiece(self.sentencepiece_model(), model)
        found = (pieces.vocab_size, pieces.eos_id, pieces.pad_id)
        if found != (info["vocab_size"], info["eos_id"], info["pad_id"]):
            raise UsageError(
                f"{model} has {found[0]} tokens, end-of-sequence id {found[1]} and pad id "
                f"{found[2]} but {path} says vocab_size = {info['vocab_size']}, eos_id = "
                f"{info['eos_id']}, pad_id = {info['pad_id']}: the records were written with "
                "another model"
            )
        if info["max_length"] > self.max_length:
            raise UsageError(
                f"{path} says max_length = {info['max_length']} but translation_input."
                f"max_length = {self.max_length}; set --gin_param='translation_input."
                f"max_length = {info['max_length']}'"
            )
        self.bucket_lengths  # noqa: B018 - checks translation_input.bucket_lengths
        schema = {language: tf.io.FixedLenFeature([], tf.string) for language in self.languages}
        what = (
            f"{'-'.join(self.languages)} sentence pairs "
            "(models.data.convert.parallel_text's schema)"
        )
        for split in splits:
            check_parses(self.files(split), schema, what)


def _int32(features: dict) -> dict[str, tf.Tensor]:
    return {name: tf.constant(value, tf.int32) for name, value in features.items()}


def _with_masks(batch: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
    """The batch with its padding masks: 1 on tokens, 0 on [PAD] (id 0)."""
    masks = {
        "input_mask": tf.cast(batch["inputs"] != 0, tf.int32),
        "target_mask": tf.cast(batch["targets"] != 0, tf.int32),
    }
    return {**batch, **masks}
