"""ImageNet-schema TFRecords (as imagenet_to_gcs.py writes them) -> per-replica image batches.

One pipeline for every classifier: built-in digits by default, real ImageNet with --data_dir.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import gin
import tensorflow as tf
from official.vision.ops import augment

from models.core.errors import UsageError, check_choice
from models.core.precision import DTYPES
from models.data.color import COLOR_DISTORTIONS, distort_color
from models.data.folder import DataFolder
from models.data.imagenet_schema import (
    ENCODED,
    INFO_COUNT_KEYS,
    INFO_FILE,
    JPEG_START,
    LABEL,
    LABEL_OFFSET,
    SPLITS,
)
from models.data.reader import InputReader, constant_padding, per_replica_batch
from models.data.records import (
    NOT_JPEG,
    budgeted,
    check_images,
    check_split,
    find_files,
    shard_heads,
)

AUGMENTATIONS = ("random_resized_crop", "none")
AUGMENT_POLICIES = ("autoaugment", "randaugment")
PAD_LABEL = -1
LABEL_ERROR = "label out of range"  # Matched by models.core.errors; keep the text.
_VALIDATE_BATCH = 256
_SAMPLE_RECORDS = 2  # Images decoded per shard before training.
_AUTOTUNE = tf.data.AUTOTUNE


def _augmenter(
    policy: str | None, autoaugment_name: str, layers: int, magnitude: float
) -> augment.ImageAugment | None:
    """Model Garden's AutoAugment (Cubuk et al. 2019, policy `autoaugment_name`) or RandAugment
    (Cubuk et al. 2020, N=layers, M=magnitude) for augment_policy, None when unset."""
    if policy is None:
        return None
    check_choice(policy, AUGMENT_POLICIES, "classification_input.augment_policy")
    if policy == "randaugment":
        if layers < 1 or not 0 <= magnitude <= 30:
            raise UsageError(
                "classification_input.randaugment_layers must be >= 1 and "
                "randaugment_magnitude in [0, 30]"
            )
        return augment.RandAugment(num_layers=layers, magnitude=magnitude)
    try:
        return augment.AutoAugment(augmentation_name=autoaugment_name)
    except ValueError:
        raise UsageError(
            f"classification_input.autoaugment_name='{autoaugment_name}' is not a Model Garden "
            "AutoAugment policy (ImageNet: 'v0')"
        ) from None


@gin.configurable("classification_input")
class ClassificationInput(DataFolder):
    """Per-replica (image, label) datasets, eval padding and serving decode for classifiers."""

    info_integers = ("num_classes", "label_offset", *INFO_COUNT_KEYS.values())

    def __init__(
        self,
        data_dir: str | None = None,
        builtin: str = "digits",
        train_pattern: str = "train-*",
        eval_pattern: str = "validation-*",
        num_classes: int = 1000,
        label_offset: int = LABEL_OFFSET,
        num_train_examples: int | None = None,
        num_eval_examples: int | None = None,
        image_size: int = 224,
        mean_rgb: Sequence[float] = (123.675, 116.28, 103.53),
        stddev_rgb: Sequence[float] = (58.395, 57.12, 57.375),
        augmentation: str = "random_resized_crop",
        crop_area_range: Sequence[float] = (0.08, 1.0),
        aspect_ratio_range: Sequence[float] = (3 / 4, 4 / 3),
        random_flip: bool = True,
        color_distortion: str = "none",
        augment_policy: str | None = None,
        autoaugment_name: str = "v0",
        randaugment_layers: int = 2,
        randaugment_magnitude: float = 10.0,
        eval_crop_fraction: float = 0.875,
        shuffle_buffer: int = 10000,
        cache: bool = False,
        cycle_length: int = 16,
        dtype: str = "float32",
    ):
        check_choice(augmentation, AUGMENTATIONS, "classification_input.augmentation")
        check_choice(color_distortion, COLOR_DISTORTIONS, "classification_input.color_distortion")
        check_choice(dtype, tuple(DTYPES), "classification_input.dtype")
        if image_size < 1 or num_classes < 1:
            raise UsageError("classification_input.image_size and num_classes must be positive")
        if not 0.0 < eval_crop_fraction <= 1.0:
            raise UsageError("classification_input.eval_crop_fraction must be in (0, 1]")
        super().__init__(data_dir, builtin)
        self.train_pattern = train_pattern
        self.eval_pattern = eval_pattern
        self.num_classes = num_classes
        self.label_offset = label_offset
        self.num_train_examples = num_train_examples
        self.num_eval_examples = num_eval_examples
        self.image_size = image_size
        self.mean_rgb = tuple(float(v) for v in mean_rgb)
        self.stddev_rgb = tuple(float(v) for v in stddev_rgb)
        self.augmentation = augmentation
        self.crop_area_range = tuple(crop_area_range)
        self.aspect_ratio_range = tuple(aspect_ratio_range)
        self.random_flip = random_flip
        self.color_distortion = color_distortion
        self.augmenter = _augmenter(
            augment_policy, autoaugment_name, randaugment_layers, randaugment_magnitude
        )
        self.eval_crop_fraction = eval_crop_fraction
        self.shuffle_buffer = shuffle_buffer
        self.cache = cache
        self.cycle_length = cycle_length
        self.dtype = DTYPES[dtype]

    # ------------------------------------------------------------ files and counts

    def files(self, split: str) -> list[str]:
        """Sorted TFRecord files of split ('train' or 'validation')."""
        training = check_split(split) == "train"
        pattern = self.train_pattern if training else self.eval_pattern
        return find_files(self.data_dir, pattern, split)

    def class_names(self) -> list[str]:
        """Each class's name: dataset_info.json's "classes" when it names them all, else the
        class index (predictions print these)."""
        names = self.dataset_info().get("classes")
        if isinstance(names, list) and len(names) == self.num_classes:
            return [str(name) for name in names]
        return [str(index) for index in range(self.num_classes)]

    def num_examples(self, split: str) -> int:
        """Examples in split: explicit argument, else dataset_info.json, else counted records."""
        training = check_split(split) == "train"
        explicit = self.num_train_examples if training else self.num_eval_examples
        if explicit is not None:
            return int(explicit)
        info = self.dataset_info()
        if INFO_COUNT_KEYS[split] in info:
            return int(info[INFO_COUNT_KEYS[split]])
        return self.counted(split)

    # ------------------------------------------------------------ datasets

    def reader(self, split: str) -> InputReader:
        """Training: shuffled, augmented examples, each with its own stateless random seed;
        evaluation: centre crops, then zero images labelled -1 (static-shape eval)."""
        training = split == "train"
        size = self.image_size
        padding = (tf.zeros([size, size, 3], self.dtype), tf.constant(PAD_LABEL, tf.int32))
        return InputReader(
            parse=self._train_example if training else self._eval_example,
            padding=constant_padding(padding),
            shuffle_buffer=self.shuffle_buffer,
            cycle_length=self.cycle_length,
            cache=self.cache,
            seeded=training,
        )

    def synthetic_dataset(
        self,
        global_batch_size: int,
        input_context: tf.distribute.InputContext | None = None,
        seed: int | None = None,
    ) -> tf.data.Dataset:
        """One random batch of this pipeline's image size, dtype and classes, repeated: the
        training input of a throughput or step check that reads no data."""
        batch = per_replica_batch(global_batch_size, input_context)
        size, seeds = self.image_size, [seed or 0, 0]
        images = tf.random.stateless_normal([batch, size, size, 3], seed=seeds)
        labels = tf.random.stateless_uniform(
            [batch], seed=seeds[::-1], maxval=self.num_classes, dtype=tf.int32
        )
        images = tf.cast(images, self.dtype)
        return tf.data.Dataset.from_tensors((images, labels)).repeat()

    # ------------------------------------------------------------ per-example work

    def _parse(self, record: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """(JPEG bytes, label - label_offset as int32), asserting the label is a valid class
        and the bytes start as a JPEG."""
        features = tf.io.parse_single_example(
            record,
            {
                ENCODED: tf.io.FixedLenFeature([], tf.string),
                LABEL: tf.io.FixedLenFeature([], tf.int64),
            },
        )
        label = features[LABEL] - self.label_offset
        low, high = self.label_offset, self.label_offset + self.num_classes
        message = (
            f"{LABEL_ERROR} {self.num_classes} (label_offset {self.label_offset}: "
            f"record labels must be in [{low}, {high}))"
        )
        jpeg = tf.equal(tf.strings.substr(features[ENCODED], 0, len(JPEG_START)), JPEG_START)
        checks = [
            tf.debugging.assert_non_negative(label, message=message),
            tf.debugging.assert_less(
                label, tf.constant(self.num_classes, tf.int64), message=message
            ),
            tf.debugging.Assert(jpeg, [NOT_JPEG]),  # before libjpeg prints its own lines
        ]
        with tf.control_dependencies(checks):  # identity: the bytes themselves wait for them
            return tf.identity(features[ENCODED]), tf.cast(label, tf.int32)

    def _train_example(self, record: tf.Tensor, seed: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """One augmented (image, label): crop and flip, colour distortion, policy."""
        image_bytes, label = self._parse(record)
        if self.augmentation == "none":
            image = self._resize(tf.io.decode_jpeg(image_bytes, channels=3))
        else:
            crop_seed, flip_seed = tf.unstack(tf.random.experimental.stateless_split(seed, 2))
            image = self._random_crop(image_bytes, crop_seed)
            if self.random_flip:
                image = tf.image.stateless_random_flip_left_right(image, flip_seed)
        color_seed = tf.random.experimental.stateless_fold_in(seed, 1)
        image = distort_color(image, self.color_distortion, color_seed)
        return self._normalize(self._policy(image)), label

    def _eval_example(self, record: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """One centre-cropped (image, label)."""
        image_bytes, label = self._parse(record)
        return self.decode_for_serving(image_bytes), label

    def decode_for_serving(self, image_bytes: tf.Tensor) -> tf.Tensor:
        """Scalar JPEG string -> normalised [image_size, image_size, 3] image, as in evaluation."""
        return self._normalize(self._center_crop(image_bytes))

    def _random_crop(self, image_bytes: tf.Tensor, seed: tf.Tensor) -> tf.Tensor:
        """Inception-style random resized crop, decoding only the sampled window."""
        shape = tf.image.extract_jpeg_shape(image_bytes)
        begin, size, _ = tf.image.stateless_sample_distorted_bounding_box(
            shape,
            bounding_boxes=tf.constant([[[0.0, 0.0, 1.0, 1.0]]]),
            seed=seed,
            min_object_covered=self.crop_area_range[0],
            aspect_ratio_range=self.aspect_ratio_range,
            area_range=self.crop_area_range,
            max_attempts=10,
            use_image_if_no_bounding_boxes=True,
        )
        window = tf.stack([begin[0], begin[1], size[0], size[1]])
        return self._resize(tf.image.decode_and_crop_jpeg(image_bytes, window, channels=3))

    def _center_crop(self, image_bytes: tf.Tensor) -> tf.Tensor:
        """Centre square of eval_crop_fraction of the shorter side, resized to image_size."""
        shape = tf.image.extract_jpeg_shape(image_bytes)
        height, width = shape[0], shape[1]
        side = tf.cast(tf.minimum(height, width), tf.float32) * self.eval_crop_fraction
        crop = tf.maximum(tf.cast(side, tf.int32), 1)
        window = tf.stack([(height - crop + 1) // 2, (width - crop + 1) // 2, crop, crop])
        return self._resize(tf.image.decode_and_crop_jpeg(image_bytes, window, channels=3))

    def _resize(self, image: tf.Tensor) -> tf.Tensor:
        """Bilinear resize to [image_size, image_size, 3] float32 on the 0..255 scale."""
        image = tf.image.resize(image, [self.image_size, self.image_size])
        return tf.ensure_shape(image, [self.image_size, self.image_size, 3])

    def _policy(self, image: tf.Tensor) -> tf.Tensor:
        """AutoAugment / RandAugment (Model Garden's ops, on 0..255 pixels) when configured."""
        if self.augmenter is None:
            return image
        pixels = tf.cast(tf.clip_by_value(tf.round(image), 0.0, 255.0), tf.uint8)
        return tf.cast(self.augmenter.distort(pixels), tf.float32)

    def _normalize(self, image: tf.Tensor) -> tf.Tensor:
        """(x - mean_rgb) / stddev_rgb, cast to the configured dtype."""
        image = (image - tf.constant(self.mean_rgb)) / tf.constant(self.stddev_rgb)
        return tf.cast(image, self.dtype)

    # ------------------------------------------------------------ validation

    def validate(
        self,
        max_bytes: int = 256 * 2**20,
        splits: Sequence[str] = SPLITS,
        sample_records: int = _SAMPLE_RECORDS,
    ) -> None:
        """Cheap pre-flight checks, so bad data fails in one line before a run writes anything:
        the class count, no empty shard, labels and keys (files up to max_bytes of each split),
        and that the first sample_records images of every shard decode."""
        self._check_classes()
        for split in splits:
            files = self.files(split)
            heads = shard_heads(files, sample_records)
            for path in budgeted(files, max_bytes):
                self._validate_file(path)
            for path, records in zip(files, heads, strict=True):
                check_images(path, records)

    def _check_classes(self) -> None:
        """UsageError when dataset_info.json's num_classes or label_offset is not the recipe's."""
        info, path = self.dataset_info(), os.path.join(self.data_dir, INFO_FILE)
        for key, ours in (("num_classes", self.num_classes), ("label_offset", self.label_offset)):
            theirs = info.get(key)
            if theirs is not None and theirs != ours:
                raise UsageError(
                    f"{path} says {key} = {theirs} but classification_input.{key} = {ours}; "
                    f"set --gin_param='classification_input.{key} = {theirs}'"
                )

    def _validate_file(self, path: str) -> None:
        """Scans every record of one file; UsageError on corruption, missing keys, bad labels."""
        spec = {ENCODED: tf.io.RaggedFeature(tf.string), LABEL: tf.io.RaggedFeature(tf.int64)}
        batches = tf.data.TFRecordDataset(path).batch(_VALIDATE_BATCH)
        batches = batches.map(lambda records: tf.io.parse_example(records, spec))
        try:
            for batch in batches:
                self._check_batch(path, batch)
        except tf.errors.DataLossError:
            raise UsageError(f"TFRecord file {path} is truncated or corrupt") from None
        except tf.errors.InvalidArgumentError:
            raise UsageError(f"{path} does not hold tf.train.Example records") from None

    def _check_batch(self, path: str, batch: dict[str, tf.RaggedTensor]) -> None:
        """UsageError for the first missing key or out-of-range label in a parsed batch."""
        for key in (ENCODED, LABEL):
            if bool(tf.reduce_any(batch[key].row_lengths() == 0)):
                raise UsageError(f"{path} has records without the '{key}' feature")
        if bool(tf.reduce_any(batch[LABEL].row_lengths() > 1)):
            raise UsageError(f"{path} has records with more than one '{LABEL}' value")
        labels = batch[LABEL].flat_values
        low, high = self.label_offset, self.label_offset + self.num_classes
        bad = tf.boolean_mask(labels, (labels < low) | (labels >= high))
        if int(tf.size(bad)) > 0:
            raise UsageError(
                f"{path} has label {int(bad[0])} outside [{low}, {high}) for "
                f"num_classes={self.num_classes} (label_offset={self.label_offset})"
            )
