"""GLUE-style TSV (a header row naming the columns; one or two text columns and a label) ->
per-replica BERT input batches, tokenised inside the input graph by tensorflow-text:
`[CLS] a [SEP] (b [SEP])`, the longer text trimmed first, as Google's BERT featurises them.

Batches are ({input_word_ids, input_mask, input_type_ids}, label), the label an index into the
task's labels (dataset_info.json's `labels`, else the train split's sorted); validation ends
with padding examples labelled -1 (static shapes)."""

from __future__ import annotations

import os
from collections.abc import Sequence

import gin
import tensorflow as tf

from models.core.errors import UsageError, nearest
from models.data import builtin as builtin_datasets
from models.data.folder import DataFolder
from models.data.imagenet_schema import INFO_FILE
from models.data.reader import InputReader, constant_padding
from models.data.records import read_info
from models.data.text import CLS, SEP, VOCAB_FILE, bert_tokenizer, read_vocab

SPLIT_FILES = {"train": "train.tsv", "validation": "dev.tsv"}  # GLUE's names
PAD_LABEL = -1
FEATURIZE_BATCH = 256  # rows tokenised together


@gin.configurable("sentence_input")
class SentenceClassificationInput(DataFolder):
    """Sentence (or sentence-pair) classification examples: the built-in WordNet glosses by
    default, any GLUE task's folder with --data_dir."""

    def __init__(
        self,
        vocab: str | None = None,
        data_dir: str | None = None,
        builtin: str = "wordnet_glosses",
        text_columns: Sequence[str] = ("sentence",),
        label_column: str = "label",
        seq_length: int = 128,
        lower_case: bool = True,
        shuffle_buffer: int = 10000,
    ):
        if not 1 <= len(text_columns) <= 2:
            raise UsageError("sentence_input.text_columns names one or two columns")
        if seq_length < 2 + len(text_columns):
            raise UsageError(f"sentence_input.seq_length {seq_length} leaves no room for text")
        self.vocab_path = vocab
        super().__init__(data_dir, builtin)
        self.text_columns = tuple(text_columns)
        self.label_column = label_column
        self.seq_length = seq_length
        self.lower_case = lower_case
        self.shuffle_buffer = shuffle_buffer
        self._labels: list[str] | None = None
        self._vocab: list[str] | None = None
        self._counted: dict[str, int] = {}

    def path(self, split: str) -> str:
        """The split's TSV file; UsageError when it is missing."""
        if split not in SPLIT_FILES:
            raise UsageError(f"unknown split '{split}'{nearest(split, SPLIT_FILES)}")
        path = os.path.join(self.data_dir, SPLIT_FILES[split])
        if not tf.io.gfile.exists(path):
            raise UsageError(f"--data_dir {self.data_dir} has no {SPLIT_FILES[split]}")
        return path

    def columns(self, split: str) -> list[str]:
        """The split's header row; UsageError when a column the input reads is absent."""
        with tf.io.gfile.GFile(self.path(split)) as file:
            header = file.readline().rstrip("\r\n").split("\t")
        for name in (*self.text_columns, self.label_column):
            if name not in header:
                raise UsageError(
                    f"{self.path(split)} has no column '{name}'{nearest(name, header)}; "
                    f"its columns: {', '.join(header)}"
                )
        return header

    def labels(self) -> list[str]:
        """The task's labels: dataset_info.json's `labels`, else the train split's, sorted."""
        if self._labels is None:
            self._labels = read_info(os.path.join(self.data_dir, INFO_FILE)).get("labels")
            if not self._labels:
                column = self.columns("train").index(self.label_column)
                self._labels = sorted({row[column] for row in self._rows("train")})
        return self._labels

    def num_examples(self, split: str) -> int:
        if split not in self._counted:
            self._counted[split] = sum(1 for _ in self._rows(split))
        return self._counted[split]

    def _rows(self, split: str):
        with tf.io.gfile.GFile(self.path(split)) as file:
            next(file)
            for line in file:
                if line.strip():
                    yield line.rstrip("\r\n").split("\t")

    # ------------------------------------------------------------ datasets

    def files(self, split: str) -> list[str]:
        return [self.path(split)]

    def reader(self, split: str) -> InputReader:
        """(features, label) of the split's rows, tokenised a batch of rows at a time;
        validation ends with padding examples labelled -1."""
        columns = self.columns(split)
        texts = [columns.index(name) for name in self.text_columns]
        label_table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(self.labels()), tf.range(len(self.labels()), dtype=tf.int32)
            ),
            default_value=PAD_LABEL,
        )
        featurize = self.featurizer()

        def examples(rows: tf.Tensor):
            fields = tf.strings.split(rows, "\t").to_tensor(default_value="")
            labels = label_table.lookup(fields[:, columns.index(self.label_column)])
            checked = tf.debugging.assert_non_negative(
                labels, message=f"a label of {self.path(split)} is not one of the task's labels"
            )
            with tf.control_dependencies([checked]):
                return featurize([fields[:, index] for index in texts]), tf.identity(labels)

        return InputReader(
            parse=examples,
            parse_batch=FEATURIZE_BATCH,
            padding=constant_padding(self._padding()),
            shuffle_buffer=self.shuffle_buffer,
            read_file=_rows,
        )

    def vocab(self) -> list[str]:
        """The pretrained model's WordPiece vocabulary: `vocab`, a vocab.txt file, the folder
        holding one (the pretraining data's), or a built-in dataset's name ("python_docs");
        read once."""
        if self._vocab is None:
            self._vocab = read_vocab(self._vocab_file())
        return self._vocab

    def _vocab_file(self) -> str:
        path = self.vocab_path
        if path is None:
            raise UsageError(
                "sentence_input.vocab is not set: the WordPiece vocabulary of the pretrained "
                "model (a vocab.txt, its pretraining data folder, or a built-in dataset's name)"
            )
        if path in builtin_datasets.BUILTINS and not tf.io.gfile.exists(path):
            path = builtin_datasets.prepare(path)
        return os.path.join(path, VOCAB_FILE) if tf.io.gfile.isdir(path) else path

    def featurizer(self):
        """texts (a list of [batch] string tensors, one per text column) -> BERT's inputs."""
        import tensorflow_text

        vocab = self.vocab()
        tokenizer = bert_tokenizer(vocab, self.lower_case)
        budget = self.seq_length - 1 - len(self.text_columns)  # [CLS] and each [SEP]
        cls_id, sep_id = vocab.index(CLS), vocab.index(SEP)

        def featurize(texts: list[tf.Tensor]) -> dict[str, tf.Tensor]:
            segments = _trim([tokenizer.tokenize(text) for text in texts], budget)
            ids, types = tensorflow_text.combine_segments(segments, cls_id, sep_id)
            word_ids, mask = tensorflow_text.pad_model_inputs(ids, self.seq_length)
            type_ids, _ = tensorflow_text.pad_model_inputs(types, self.seq_length)
            features = {"input_word_ids": word_ids, "input_mask": mask, "input_type_ids": type_ids}
            return {name: tf.cast(value, tf.int32) for name, value in features.items()}

        return featurize

    def _padding(self) -> tuple[dict[str, tf.Tensor], tf.Tensor]:
        zeros = tf.zeros([self.seq_length], tf.int32)
        features = {"input_word_ids": zeros, "input_mask": zeros, "input_type_ids": zeros}
        return features, tf.constant(PAD_LABEL, tf.int32)


def _rows(path: tf.Tensor) -> tf.data.Dataset:
    """A TSV file's rows: its lines after the header, blank ones left out."""
    lines = tf.data.TextLineDataset(path).skip(1)
    return lines.filter(lambda line: tf.strings.length(tf.strings.strip(line)) > 0)


def _trim(segments: list[tf.RaggedTensor], budget: int) -> list[tf.RaggedTensor]:
    """Each example's segments cut to `budget` tokens together as Google's BERT cuts them: the
    longer one loses its last token until they fit (ties: the second). Closed form of that loop:
    the first keeps min(len_a, max(budget - len_b, ceil(budget / 2))), the second the rest."""
    lengths = [segment.row_lengths() for segment in segments]
    if len(segments) == 1:
        keep = [tf.minimum(lengths[0], budget)]
    else:
        first = tf.minimum(lengths[0], tf.maximum(budget - lengths[1], (budget + 1) // 2))
        keep = [first, tf.minimum(lengths[1], budget - first)]
    return [
        tf.ragged.boolean_mask(segment, tf.ragged.range(length) < kept[:, None])
        for segment, length, kept in zip(segments, lengths, keep, strict=True)
    ]
