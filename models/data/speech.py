"""Speech records (models.data.speech_schema; the LibriSpeech converter's or the built-in
speech's) -> per-replica batches for an encoder-decoder ASR model. Features are computed in the
graph (models.data.audio_features: normalised 80-bin log-mel frames, SpecAugment on training
batches only, each example masked from its own stateless seed); targets are the normalised
transcript's character or WordPiece ids (models.data.transcripts), ended by EOS (1), padded
with 0.

Training batches hold a budget of frames, as translation's hold tokens: a batch of B holds
B x max_frames padded frames. Clips of similar length share a bucket; bucket k's batches have
the static shape [B x max_frames // L_k, L_k, 80] (tf.data's pad-to-bucket-boundary), so XLA
compiles one program per bucket; `bucket_seconds = ()` pads every batch to max_frames (one
shape). Frame counts are rounded up to a multiple of 4 (the model's x4 subsampling). Evaluation
batches hold B clips padded to max_frames: every clip once, then padding clips of unique_id -1.

A batch is {"features": float32 [B, T, 80], "feature_mask": int32 [B, T] (1 on frames),
"targets": int32 [B, max_target_length], "target_mask": int32 [B, max_target_length]};
evaluation's also "unique_id" int32 [B], which indexes `evaluation_set(split)`."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

import gin
import numpy as np
import tensorflow as tf

from models.core.errors import UsageError, nearest
from models.data.audio_features import NUM_BINS, features, num_frames, spec_augment
from models.data.folder import DataFolder
from models.data.imagenet_schema import INFO_FILE
from models.data.reader import InputReader, constant_padding
from models.data.records import check_parses, features_by_id, find_files, texts_by_id
from models.data.speech_schema import (
    AUDIO,
    FEATURES,
    SAMPLE_RATE,
    SPLIT_NAME,
    TRANSCRIPT,
    UNIQUE_ID,
    UTTERANCE,
)
from models.data.transcripts import EOS_ID, Characters, Wordpieces
from models.data.transcripts import targets as make_targets

PAD_ID = -1  # unique_id of evaluation's padding clips (translation's name)
FRAME_MULTIPLE = 4  # padded frame counts: the ASR model subsamples x4 in time
SMALLEST_BUCKET_SECONDS = 2.0  # default buckets: 2, 4, 8, ... seconds up to max_seconds
FRAMES = "frames"  # an example's frame count, made into feature_mask per batch
_AUTOTUNE = tf.data.AUTOTUNE


def padded_frames(samples: int) -> int:
    """The frames of a clip of `samples`, rounded up to FRAME_MULTIPLE."""
    return -(-max(num_frames(samples), 1) // FRAME_MULTIPLE) * FRAME_MULTIPLE


def bucket_frames(
    seconds: Sequence[float] | None, max_seconds: float, max_frames: int
) -> tuple[int, ...]:
    """Padded frame lengths of the training buckets, increasing, the last max_frames:
    doubling from SMALLEST_BUCKET_SECONDS by default; UsageError for seconds that do not
    increase from above 0 to at most max_seconds."""
    if seconds is None:
        seconds, length = [], SMALLEST_BUCKET_SECONDS
        while length < max_seconds:
            seconds.append(length)
            length *= 2
    values = [float(value) for value in seconds]
    if any(b <= a for a, b in zip(values, values[1:], strict=False)) or (
        values and (values[0] <= 0 or values[-1] > max_seconds)
    ):
        raise UsageError(
            f"speech_input.bucket_seconds {values} must increase from above 0 to at most "
            f"max_seconds {max_seconds:g}"
        )
    lengths = sorted({padded_frames(round(value * SAMPLE_RATE)) for value in values})
    return (*[length for length in lengths if length < max_frames], max_frames)


@gin.configurable("speech_input")
class SpeechInput(DataFolder):
    """Per-replica speech batches: the built-in `spoken_wordnet` by default, the LibriSpeech
    converter's records with --data_dir."""

    info_integers = ("sample_rate", "max_samples")
    info_writer = "python -m models.data.convert.librispeech"

    def __init__(
        self,
        data_dir: str | None = None,
        builtin: str = "spoken_wordnet",
        targets: str = "characters",
        max_seconds: float | None = None,
        max_target_length: int | None = None,
        bucket_seconds: Sequence[float] | None = None,
        shuffle_buffer: int = 1000,
    ):
        super().__init__(data_dir, builtin)
        self.targets = targets
        self._max_seconds = max_seconds
        self._max_target_length = max_target_length
        self._bucket_seconds = bucket_seconds
        self.shuffle_buffer = shuffle_buffer  # records; a LibriSpeech clip's is ~400 kB
        self._tokenizer: Characters | Wordpieces | None = None
        self._eval: dict[str, tuple[list[str], list[str]]] = {}

    def files(self, split: str) -> list[str]:
        """Sorted shards of split; UsageError naming the folder's splits when it has none."""
        splits = self.dataset_info()["splits"]
        if split not in splits or not SPLIT_NAME.fullmatch(split):
            raise UsageError(
                f"unknown split '{split}'{nearest(split, splits)}; --data_dir {self.data_dir} "
                f"holds {', '.join(splits)}"
            )
        return find_files(self.data_dir, f"{split}-*-of-*", split)

    def dataset_info(self) -> dict:
        """data_dir/dataset_info.json, read once; UsageError when it lacks what the converter
        writes or is not 16 kHz."""
        info, path = super().dataset_info(), os.path.join(self.data_dir, INFO_FILE)
        for key in ("sample_rate", "max_samples", "max_seconds", "splits"):
            if key not in info:
                raise UsageError(f"{path} has no {key}; write the data with {self.info_writer}")
        if info["sample_rate"] != SAMPLE_RATE:
            raise UsageError(f"{path} says sample_rate {info['sample_rate']}, not {SAMPLE_RATE}")
        return info

    def statistics(self, split: str) -> dict:
        """dataset_info.json's statistics of split; UsageError when it has none."""
        key = f"{split}_statistics"
        if key not in self.dataset_info():
            raise UsageError(f"{os.path.join(self.data_dir, INFO_FILE)} has no {key}")
        return self.dataset_info()[key]

    @property
    def max_seconds(self) -> float:
        """The longest clip read: speech_input.max_seconds, else the data's."""
        return float(self._max_seconds or self.dataset_info()["max_seconds"])

    @property
    def max_frames(self) -> int:
        """Frames of evaluation's batches and the longest bucket."""
        if self._max_seconds:
            return padded_frames(round(self._max_seconds * SAMPLE_RATE))
        return padded_frames(self.dataset_info()["max_samples"])

    @property
    def bucket_frames(self) -> tuple[int, ...]:
        """Padded frame lengths of the training buckets, the last max_frames."""
        return bucket_frames(self._bucket_seconds, self.max_seconds, self.max_frames)

    def data_target_length(self, split: str | None = None) -> int:
        """The longest target (EOS included) of split, else of all splits, in the data."""
        splits = [split] if split else self.dataset_info()["splits"]
        lengths = [self.statistics(name)["target_lengths"] for name in splits]
        if any(self.targets not in found for found in lengths):
            raise UsageError(
                f"{self.data_dir}'s dataset_info.json has no {self.targets} lengths for every "
                "split (converted before its WordPiece vocabulary); set "
                "speech_input.max_target_length"
            )
        return max(int(found[self.targets]) for found in lengths)

    @property
    def max_target_length(self) -> int:
        """Padded target length (EOS included): speech_input.max_target_length, else the
        data's."""
        return int(self._max_target_length or self.data_target_length())

    def tokenizer(self) -> Characters | Wordpieces:
        """The targets' tokenizer (speech_input.targets; a tf.Module an exported model can
        track), made once."""
        if self._tokenizer is None:
            folder = None if self.targets == "characters" else self.data_dir  # reads no data
            self._tokenizer = make_targets(self.targets, folder)
        return self._tokenizer

    @property
    def vocab_size(self) -> int:
        return int(self.tokenizer().vocab_size)

    @property
    def eos_id(self) -> int:
        return EOS_ID

    def num_examples(self, split: str) -> int:
        """Clips in split (dataset_info.json's num_<split>_examples, as every schema's)."""
        key = f"num_{split}_examples"
        if key not in self.dataset_info():
            raise UsageError(f"{os.path.join(self.data_dir, INFO_FILE)} has no {key}")
        return int(self.dataset_info()[key])

    def num_frames(self, split: str) -> int:
        """Feature frames in split, before padding (an epoch of frame batches)."""
        return int(self.statistics(split)["frames"])

    def detokenize(self, ids: np.ndarray | Sequence[Sequence[int]]) -> list[str]:
        """Text of each row of target ids, up to its first EOS (the model's transcripts)."""
        rows = [np.asarray(row, np.int32).reshape(-1) for row in ids]
        if not rows:
            return []
        ragged = tf.RaggedTensor.from_row_lengths(np.concatenate(rows), [len(row) for row in rows])
        texts = self.tokenizer().detokenize(ragged).numpy()
        return [text.decode("utf-8", errors="replace") for text in texts]

    def evaluation_set(self, split: str) -> tuple[list[str], list[str]]:
        """(utterance ids, reference transcripts as the source wrote them) of split, indexed
        by unique_id, read once."""
        if split not in self._eval:
            self._eval[split] = read_references(self.files(split))
        return self._eval[split]

    # ------------------------------------------------------------ datasets

    def reader(self, split: str) -> InputReader:
        """Clips with their features and targets: training endless, shuffled, SpecAugmented
        and bucketed by frames; evaluation every clip once, then padding clips."""
        training = split == "train"
        padding = {
            "features": tf.zeros([0, NUM_BINS]),
            "targets": tf.zeros([0], tf.int32),
            FRAMES: tf.constant(0),
            UNIQUE_ID: tf.constant(PAD_ID),
        }
        return InputReader(
            parse=self._parser(training),
            seeded=training,
            padding=constant_padding(padding),
            batch=self._frame_batches if training else self._evaluation_batches,
            shuffle_buffer=self.shuffle_buffer,
        )

    def _parser(self, training: bool):
        """A record (training: and its seed [2]) -> {"features" [frames, 80], "targets"
        [tokens + EOS], "frames"} (evaluation: and "unique_id"; a longer clip or target cut
        to max_frames or max_target_length, EOS kept)."""
        tokenizer = self.tokenizer()
        max_frames, max_targets = self.max_frames, self.max_target_length
        schema = {name: FEATURES[name] for name in (AUDIO, TRANSCRIPT, UNIQUE_ID)}

        def parse(record: tf.Tensor, seed: tf.Tensor | None = None) -> dict[str, tf.Tensor]:
            parsed = tf.io.parse_single_example(record, schema)
            clip = features(parsed[AUDIO])
            ids = tokenizer.tokenize(tf.reshape(parsed[TRANSCRIPT], [1])).flat_values
            if training:
                clip = spec_augment(clip, seed)
            else:
                clip, ids = clip[:max_frames], ids[: max_targets - 1]
            example = {
                "features": clip,
                "targets": tf.concat([ids, [EOS_ID]], axis=0),
                FRAMES: tf.shape(clip)[0],
            }
            if not training:
                example[UNIQUE_ID] = tf.cast(parsed[UNIQUE_ID], tf.int32)
            return example

        return parse

    def _frame_batches(self, clips: tf.data.Dataset, batch_size: int) -> tf.data.Dataset:
        """Clips within max_frames and max_target_length (others, only where the recipe's
        maxima are below the data's, left out) in batches of up to batch_size x max_frames
        padded frames, by bucket, with their masks."""
        max_frames, max_targets = self.max_frames, self.max_target_length
        lengths = self.bucket_frames
        clips = clips.filter(
            lambda clip: (clip[FRAMES] <= max_frames) & (tf.size(clip["targets"]) <= max_targets)
        )
        if len(lengths) == 1:  # one static shape, known to the dataset's element_spec
            shapes = {"features": [max_frames, NUM_BINS], "targets": [max_targets], FRAMES: []}
            batches = clips.padded_batch(batch_size, shapes, drop_remainder=True)
        else:
            batches = clips.bucket_by_sequence_length(
                lambda clip: clip[FRAMES],
                bucket_boundaries=[length + 1 for length in lengths],  # bucket k: up to L_k
                bucket_batch_sizes=[*(batch_size * max_frames // n for n in lengths), 1],
                padded_shapes={
                    "features": [None, NUM_BINS],
                    "targets": [max_targets],
                    FRAMES: [],
                },
                pad_to_bucket_boundary=True,
                drop_remainder=True,
            )
        return batches.map(_with_masks, num_parallel_calls=_AUTOTUNE)

    def _evaluation_batches(self, clips: tf.data.Dataset, batch_size: int) -> tf.data.Dataset:
        shapes = {
            "features": [self.max_frames, NUM_BINS],
            "targets": [self.max_target_length],
            FRAMES: [],
            UNIQUE_ID: [],
        }
        batches = clips.padded_batch(batch_size, shapes, drop_remainder=True)
        return batches.map(_with_masks, num_parallel_calls=_AUTOTUNE)

    # ------------------------------------------------------------ validation

    def validate(self, splits: Sequence[str] = ("train", "validation")) -> None:
        """Cheap pre-flight checks, one line each: dataset_info.json, the targets' tokenizer,
        clips no longer than speech_input.max_seconds and targets no longer than
        speech_input.max_target_length, buckets, and the first records of every shard."""
        self.dataset_info()
        self.tokenizer()
        for split in splits:
            files = self.files(split)
            self._check_lengths(split)
            check_parses(files, FEATURES, "speech clips (models.data.convert.librispeech's schema)")
        self.bucket_frames  # noqa: B018 - checks speech_input.bucket_seconds

    def _check_lengths(self, split: str) -> None:
        """UsageError when split's longest clip or target exceeds the recipe's maximum."""
        stats = self.statistics(split)
        if self._max_seconds and stats["max_samples"] > round(self._max_seconds * SAMPLE_RATE):
            raise UsageError(
                f"{split} clip {stats['longest_clip']} is {stats['max_seconds']:.2f} s long, "
                f"over speech_input.max_seconds = {self._max_seconds:g}; raise it "
                f"(--gin_param='speech_input.max_seconds = {math.ceil(stats['max_seconds'])}') "
                "or leave it unset for the data's longest"
            )
        longest = self.data_target_length(split)
        if self._max_target_length and longest > self._max_target_length:
            raise UsageError(
                f"{split} has a transcript of {longest} {self.targets} with EOS, over "
                f"speech_input.max_target_length = {self._max_target_length}; set "
                f"--gin_param='speech_input.max_target_length = {longest}'"
            )


def read_references(files: Sequence[str]) -> tuple[list[str], list[str]]:
    """(utterance ids, transcripts) of a split's records, in unique_id order."""
    return texts_by_id(files, (UTTERANCE, TRANSCRIPT), UNIQUE_ID)


def read_clips(files: Sequence[str]) -> list[np.ndarray]:
    """The int16 samples of a split's clips, in unique_id order (as read_references)."""
    return [np.frombuffer(pcm, "<i2") for (pcm,) in features_by_id(files, (AUDIO,), UNIQUE_ID)]


def _with_masks(batch: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
    """The batch with feature_mask (1 on a clip's frames) and target_mask (1 on ids), without
    the frame counts."""
    batch = dict(batch)
    frames = batch.pop(FRAMES)
    length = batch["features"].shape[1] or tf.shape(batch["features"])[1]
    batch["feature_mask"] = tf.sequence_mask(frames, length, tf.int32)
    batch["target_mask"] = tf.cast(batch["targets"] != 0, tf.int32)  # id 0 pads
    return batch
