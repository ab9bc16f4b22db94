"""BERT pretraining records (create_pretraining_data.py's schema) -> per-replica masked-LM and
next-sentence batches, with the records' static masks or, as a gin option, new masks every
time a pair is read (tensorflow-text's masking ops, as RoBERTa's dynamic masking).

Batches are dicts with Model Garden's feature names: `input_word_ids`, `input_mask`,
`input_type_ids`, `masked_lm_positions`, `masked_lm_ids`, `masked_lm_weights`,
`next_sentence_labels` (-1 on the evaluation padding)."""

from __future__ import annotations

import os
from collections.abc import Sequence

import gin
import tensorflow as tf

from models.core.errors import UsageError
from models.data.folder import ShardedFolder
from models.data.imagenet_schema import INFO_FILE
from models.data.reader import InputReader, constant_padding
from models.data.records import check_parses
from models.data.text import CLS, MASK, PAD, SEP, VOCAB_FILE, read_vocab

PAD_LABEL = -1
_AUTOTUNE = tf.data.AUTOTUNE
_RENAMED = {"input_ids": "input_word_ids", "segment_ids": "input_type_ids"}


def _schema(seq_length: int, max_predictions: int) -> dict[str, tf.io.FixedLenFeature]:
    """create_pretraining_data.py's features at these lengths."""
    ints = lambda n: tf.io.FixedLenFeature([n], tf.int64)  # noqa: E731
    return {
        "input_ids": ints(seq_length),
        "input_mask": ints(seq_length),
        "segment_ids": ints(seq_length),
        "masked_lm_positions": ints(max_predictions),
        "masked_lm_ids": ints(max_predictions),
        "masked_lm_weights": tf.io.FixedLenFeature([max_predictions], tf.float32),
        "next_sentence_labels": ints(1),
    }


@gin.configurable("pretraining_input")
class PretrainingInput(ShardedFolder):
    """Per-replica batches of BERT pretraining pairs: the built-in `python_docs` records by
    default, records of create_pretraining_data.py with --data_dir."""

    info_integers = ("vocab_size", "max_seq_length", "max_predictions_per_seq")

    def __init__(
        self,
        data_dir: str | None = None,
        builtin: str = "python_docs",
        train_pattern: str = "train-*",
        eval_pattern: str = "validation-*",
        seq_length: int = 128,
        max_predictions_per_seq: int = 20,
        dynamic_masking: bool = False,
        masked_lm_prob: float = 0.15,
        shuffle_buffer: int = 10000,
        cycle_length: int = 16,
    ):
        if not 0.0 < masked_lm_prob < 1.0:
            raise UsageError(
                f"pretraining_input.masked_lm_prob must be in (0, 1), got {masked_lm_prob}"
            )
        super().__init__(data_dir, builtin)
        self.patterns = {"train": train_pattern, "validation": eval_pattern}
        self.seq_length = seq_length
        self.max_predictions = max_predictions_per_seq
        self.dynamic_masking = dynamic_masking
        self.masked_lm_prob = masked_lm_prob
        self.shuffle_buffer = shuffle_buffer
        self.cycle_length = cycle_length

    def vocab(self) -> list[str]:
        """The data's WordPiece vocabulary (data_dir/vocab.txt)."""
        return read_vocab(os.path.join(self.data_dir, VOCAB_FILE))

    def vocab_size(self) -> int:
        """dataset_info.json's vocab_size, else the length of data_dir/vocab.txt."""
        return int(self.dataset_info().get("vocab_size") or len(self.vocab()))

    def reader(self, split: str) -> InputReader:
        """Pairs: training endless and shuffled (masked anew in each batch with
        dynamic_masking), validation every pair once and then padding pairs (no masked token,
        next_sentence_labels -1)."""
        training = split == "train"
        return InputReader(
            parse=self._parse,
            padding=constant_padding(self._padding()),
            batch=self._remasked_batches if training and self.dynamic_masking else None,
            shuffle_buffer=self.shuffle_buffer,
            cycle_length=self.cycle_length,
        )

    def _remasked_batches(self, pairs: tf.data.Dataset, batch_size: int) -> tf.data.Dataset:
        remask = tf.autograph.experimental.do_not_convert(self._dynamic_masker())
        batches = pairs.batch(batch_size, drop_remainder=True)
        return batches.map(remask, num_parallel_calls=_AUTOTUNE)

    def _parse(self, record: tf.Tensor) -> dict[str, tf.Tensor]:
        """One pair as int32 features under Model Garden's names."""
        features = tf.io.parse_single_example(
            record, _schema(self.seq_length, self.max_predictions)
        )
        pair = {
            _RENAMED.get(k, k): v if v.dtype == tf.float32 else tf.cast(v, tf.int32)
            for k, v in features.items()
        }
        pair["next_sentence_labels"] = pair["next_sentence_labels"][0]
        return pair

    def _padding(self) -> dict[str, tf.Tensor]:
        """An evaluation padding pair: nothing to predict, next sentence label -1."""
        zeros = lambda n, dtype=tf.int32: tf.zeros([n], dtype)  # noqa: E731
        return {
            "input_word_ids": zeros(self.seq_length),
            "input_mask": zeros(self.seq_length),
            "input_type_ids": zeros(self.seq_length),
            "masked_lm_positions": zeros(self.max_predictions),
            "masked_lm_ids": zeros(self.max_predictions),
            "masked_lm_weights": zeros(self.max_predictions, tf.float32),
            "next_sentence_labels": tf.constant(PAD_LABEL, tf.int32),
        }

    def _dynamic_masker(self):
        """A batch function that restores each pair's tokens and masks them anew: masked_lm_prob
        of the tokens (never [CLS], [SEP] or padding), at most max_predictions_per_seq, 80%
        [MASK], 10% a random token, 10% unchanged (tensorflow-text's ops)."""
        import tensorflow_text

        vocab = self.vocab()
        selector = tensorflow_text.RandomItemSelector(
            max_selections_per_batch=self.max_predictions,
            selection_rate=self.masked_lm_prob,
            unselectable_ids=[vocab.index(token) for token in (PAD, CLS, SEP)],
        )
        chooser = tensorflow_text.MaskValuesChooser(len(vocab), vocab.index(MASK))

        def remask(batch: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
            ids = _unmasked(batch)
            lengths = tf.reduce_sum(batch["input_mask"], axis=1)
            ragged = tf.RaggedTensor.from_tensor(ids, lengths=lengths)
            masked, positions, targets = tensorflow_text.mask_language_model(
                ragged, selector, chooser
            )
            width = [None, self.max_predictions]
            return {
                **batch,
                "input_word_ids": tf.cast(masked.to_tensor(shape=tf.shape(ids)), tf.int32),
                "masked_lm_positions": tf.cast(positions.to_tensor(shape=width), tf.int32),
                "masked_lm_ids": tf.cast(targets.to_tensor(shape=width), tf.int32),
                "masked_lm_weights": tf.cast(
                    tf.ones_like(positions).to_tensor(shape=width), tf.float32
                ),
            }

        return remask

    # ------------------------------------------------------------ validation

    def validate(self, splits: Sequence[str] = ("train", "validation")) -> None:
        """Cheap pre-flight checks, one line each: the data's shapes are the recipe's, and the
        first records of every shard are pretraining pairs of those shapes."""
        info, path = self.dataset_info(), os.path.join(self.data_dir, INFO_FILE)
        for key, ours in (
            ("max_seq_length", self.seq_length),
            ("max_predictions_per_seq", self.max_predictions),
        ):
            gin_name = "seq_length" if key == "max_seq_length" else key
            if info.get(key) is not None and info[key] != ours:
                raise UsageError(
                    f"{path} says {key} = {info[key]} but pretraining_input.{gin_name} = {ours}; "
                    f"set --gin_param='pretraining_input.{gin_name} = {info[key]}'"
                )
        schema = _schema(self.seq_length, self.max_predictions)
        what = (
            f"BERT pretraining pairs of sequence length {self.seq_length} and "
            f"{self.max_predictions} predictions (create_pretraining_data.py's schema)"
        )
        for split in splits:
            check_parses(self.files(split), schema, what)


def _unmasked(batch: dict[str, tf.Tensor]) -> tf.Tensor:
    """The pairs' original token ids: the static masks' targets (the slots of weight 1) written
    back at their positions."""
    ids = batch["input_word_ids"]
    weights = batch["masked_lm_weights"] > 0
    rows = tf.broadcast_to(tf.range(tf.shape(ids)[0])[:, None], tf.shape(weights))
    where = tf.stack(
        [tf.boolean_mask(rows, weights), tf.boolean_mask(batch["masked_lm_positions"], weights)],
        axis=1,
    )
    return tf.tensor_scatter_nd_update(ids, where, tf.boolean_mask(batch["masked_lm_ids"], weights))
