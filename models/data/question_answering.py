"""SQuAD v1.1 records (models.data.convert.squad; Model Garden's question-answering schema) ->
per-replica span-extraction batches, and the evaluation split's questions for the official
EM/F1.

Training batches are ({input_word_ids, input_mask, input_type_ids}, {start_positions,
end_positions}); evaluation batches are the features with `unique_ids`, which end with padding
windows of id -1 (static shapes)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

import gin
import tensorflow as tf

from models.core.errors import UsageError
from models.data.convert.squad import EVAL_JSON, WINDOW_FLAGS, Windows, features, read_squad
from models.data.folder import DataFolder
from models.data.imagenet_schema import INFO_FILE
from models.data.reader import InputReader, constant_padding
from models.data.records import check_parses, check_split, find_files
from models.data.text import VOCAB_FILE, read_vocab

PAD_ID = -1
INPUTS = {
    "input_ids": "input_word_ids",
    "input_mask": "input_mask",
    "segment_ids": "input_type_ids",
}


def _schema(seq_length: int, training: bool) -> dict[str, tf.io.FixedLenFeature]:
    """The converter's features of one window (Model Garden's QA data loader reads the same)."""
    schema = {name: tf.io.FixedLenFeature([seq_length], tf.int64) for name in INPUTS}
    labels = ("start_positions", "end_positions") if training else ("unique_ids",)
    return {**schema, **{name: tf.io.FixedLenFeature([], tf.int64) for name in labels}}


@gin.configurable("squad_input")
class QuestionAnsweringInput(DataFolder):
    """Per-replica batches of question/context windows: the built-in `wordnet_qa` by default,
    the converter's SQuAD records with --data_dir."""

    info_integers = ("max_seq_length",)
    info_writer = "python -m models.data.convert.squad"  # the windows' settings: evaluation's

    def __init__(
        self,
        data_dir: str | None = None,
        builtin: str = "wordnet_qa",
        seq_length: int = 384,
        shuffle_buffer: int = 10000,
    ):
        super().__init__(data_dir, builtin)
        self.seq_length = seq_length
        self.shuffle_buffer = shuffle_buffer
        self._eval: tuple[dict, list, list] | None = None
        self._vocab: list[str] | None = None

    def files(self, split: str) -> list[str]:
        return find_files(self.data_dir, f"{check_split(split)}-*-of-*", split)

    def vocab(self) -> list[str]:
        """The records' WordPiece vocabulary (data_dir/vocab.txt), read once."""
        if self._vocab is None:
            self._vocab = read_vocab(os.path.join(self.data_dir, VOCAB_FILE))
        return self._vocab

    def windows(self) -> Windows:
        """How the converter windowed the questions and contexts."""
        info = self.dataset_info()
        return Windows(**{name: info[name] for name in WINDOW_FLAGS if name in info})

    def num_examples(self, split: str) -> int:
        """Windows in split (a long context gives several)."""
        key = f"num_{check_split(split)}_examples"
        if key not in self.dataset_info():
            raise UsageError(f"{os.path.join(self.data_dir, INFO_FILE)} has no {key}")
        return int(self.dataset_info()[key])

    def evaluation_set(self) -> tuple[dict, list[Any], list[Any]]:
        """(validation.json's SQuAD dict, its questions as Model Garden's SquadExamples, their
        windows as InputFeatures with the records' unique ids), made once: the token-to-text
        maps that turn predicted spans into answers."""
        if self._eval is None:
            path = os.path.join(self.data_dir, EVAL_JSON)
            with tf.io.gfile.GFile(path) as file:
                squad = json.load(file)
            examples = read_squad(path, training=False)
            vocab = os.path.join(self.data_dir, VOCAB_FILE)
            self._eval = squad, examples, features(examples, vocab, self.windows(), False)
        return self._eval

    # ------------------------------------------------------------ datasets

    def reader(self, split: str) -> InputReader:
        """Windows: training endless and shuffled, (features, start and end positions);
        validation every window once, features with unique_ids, then padding windows."""
        training = split == "train"
        schema = _schema(self.seq_length, training)

        def parse(record: tf.Tensor):
            parsed = tf.io.parse_single_example(record, schema)
            window = {INPUTS[name]: tf.cast(parsed.pop(name), tf.int32) for name in INPUTS}
            if not training:
                return {**window, "unique_ids": parsed["unique_ids"]}
            return window, {name: tf.cast(value, tf.int32) for name, value in parsed.items()}

        return InputReader(
            parse=parse,
            padding=constant_padding(self._padding()),
            shuffle_buffer=self.shuffle_buffer,
        )

    def _padding(self) -> dict[str, tf.Tensor]:
        zeros = tf.zeros([self.seq_length], tf.int32)
        padding = {name: zeros for name in INPUTS.values()}
        return {**padding, "unique_ids": tf.constant(PAD_ID, tf.int64)}

    # ------------------------------------------------------------ validation

    def validate(self, splits: Sequence[str] = ("train", "validation")) -> None:
        """Cheap pre-flight checks, one line each: the data's window length is the recipe's,
        and the first records of every shard are windows of that length."""
        info, path = self.dataset_info(), os.path.join(self.data_dir, INFO_FILE)
        if info.get("max_seq_length") not in (None, self.seq_length):
            raise UsageError(
                f"{path} says max_seq_length = {info['max_seq_length']} but "
                f"squad_input.seq_length = {self.seq_length}; set "
                f"--gin_param='squad_input.seq_length = {info['max_seq_length']}'"
            )
        for split in splits:
            schema = _schema(self.seq_length, split == "train")
            what = (
                f"SQuAD {split} windows of {self.seq_length} tokens "
                "(models.data.convert.squad's schema)"
            )
            check_parses(self.files(split), schema, what)
            if split == "validation" and not tf.io.gfile.exists(
                os.path.join(self.data_dir, EVAL_JSON)
            ):
                raise UsageError(
                    f"--data_dir {self.data_dir} has no {EVAL_JSON} (the questions and answers "
                    "the evaluation scores against; the converter writes it with the split)"
                )
