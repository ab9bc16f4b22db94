"""Semantic-segmentation TFRecords (VOC schema, as models.data.convert.voc and DeepLab's
build_voc2012_data.py write them) -> per-replica batches of normalised images and class masks.
Model Garden's segmentation decoder and parser do the per-example work (scale jitter, crop,
flip, padding with the ignore label); this module reads the shards, pads evaluation to whole
batches with examples that count nothing and checks the data before a run."""

from __future__ import annotations

import io
import os
from collections.abc import Sequence

import gin
import numpy as np
import tensorflow as tf
from official.vision.configs.semantic_segmentation import DenseFeatureConfig
from official.vision.dataloaders import segmentation_input
from official.vision.ops import preprocess_ops
from PIL import Image

from models.core.errors import UsageError
from models.core.precision import DTYPES
from models.data.convert.voc import MASK_ENCODED
from models.data.folder import ShardedFolder
from models.data.imagenet_schema import INFO_FILE, SPLITS
from models.data.reader import InputReader, blank_like
from models.data.records import check_images, shard_heads

_SAMPLE_RECORDS = 2  # records decoded per shard before a run


@gin.configurable("segmentation_input")
class SegmentationInput(ShardedFolder):
    """Per-replica (image, labels) datasets of a VOC-schema directory: training examples are
    scale-jittered, cropped and flipped; evaluation examples are resized to the output grid.

    Labels are Model Garden's: `masks` [S, S, 1] float32 class indices (`ignore_label` where
    void or padded), `valid_masks` [S, S, 1] bool, `image_info` [4, 2] float32 (original size,
    scaled size, scale, offset). `num_classes` counts the background (VOC: 21); by default it
    is dataset_info.json's.
    """

    info_integers = (*(f"num_{split}_examples" for split in SPLITS), "num_classes")

    def __init__(
        self,
        data_dir: str | None = None,
        builtin: str = "digit_scenes_voc",
        train_pattern: str = "train-*",
        eval_pattern: str = "validation-*",
        image_size: int | Sequence[int] = 128,
        crop_size: Sequence[int] | None = None,
        num_classes: int | None = None,
        ignore_label: int = 255,
        aug_rand_hflip: bool = True,
        aug_scale_min: float = 1.0,
        aug_scale_max: float = 1.0,
        shuffle_buffer: int = 1000,
        cycle_length: int = 16,
        dtype: str = "float32",
    ):
        if dtype not in DTYPES:
            raise UsageError(f"segmentation_input.dtype must be one of {', '.join(DTYPES)}")
        sizes = [*_height_width(image_size), *(_height_width(crop_size) if crop_size else ())]
        if min(sizes) < 1 or not 0 < aug_scale_min <= aug_scale_max:
            raise UsageError(
                "segmentation_input: image_size and crop_size must be positive and "
                "0 < aug_scale_min <= aug_scale_max"
            )
        if not 0 <= ignore_label <= 255:
            raise UsageError(
                f"segmentation_input.ignore_label = {ignore_label}: masks are 8-bit PNGs, so "
                "it must be in 0..255"
            )
        super().__init__(data_dir, builtin)
        self.patterns = {"train": train_pattern, "validation": eval_pattern}
        self.output_size = _height_width(image_size)
        self.crop_size = _height_width(crop_size) if crop_size else None
        self._num_classes = num_classes
        self.ignore_label = ignore_label
        self.augmentation = (aug_rand_hflip, aug_scale_min, aug_scale_max)
        self.shuffle_buffer, self.cycle_length = shuffle_buffer, cycle_length
        self.dtype = dtype

    @property
    def train_size(self) -> list[int]:
        """[height, width] of the training examples: the crop, else the output size."""
        return self.crop_size or self.output_size

    # ------------------------------------------------------------ files and counts

    @property
    def num_classes(self) -> int:
        """Classes the model predicts, background included: dataset_info.json's num_classes."""
        if self._num_classes is not None:
            return self._num_classes
        classes = self.dataset_info().get("num_classes")
        if classes is None:
            raise UsageError(
                f"{os.path.join(self.data_dir, INFO_FILE)} gives no num_classes; convert the data "
                "with `python -m models.data.convert.voc` or set segmentation_input.num_classes"
            )
        return int(classes)

    @property
    def class_names(self) -> list[str]:
        """Names of the classes in index order: dataset_info.json's, else their indices."""
        names = self.dataset_info().get("classes")
        if isinstance(names, list) and len(names) == self.num_classes:
            return [str(name) for name in names]
        return [str(index) for index in range(self.num_classes)]

    # ------------------------------------------------------------ datasets

    def reader(self, split: str) -> InputReader:
        """(images, labels) of Model Garden's parser. Evaluation reads every image once, then
        padding examples whose masks are all ignore_label (valid_masks all False), so that
        they count in no metric."""
        training = split == "train"
        return InputReader(
            parse=self._parse_fn(training),
            padding=blank_like(self._blank),
            shuffle_buffer=self.shuffle_buffer,
            cycle_length=self.cycle_length,
        )

    def parser(self) -> segmentation_input.Parser:
        """Model Garden's segmentation parser with this input's size, augmentation and ignore
        label; evaluation masks are resized (nearest) to the output grid, as the images are."""
        flip, scale_min, scale_max = self.augmentation
        return segmentation_input.Parser(
            output_size=self.output_size,
            crop_size=self.crop_size,
            resize_eval_groundtruth=True,
            ignore_label=self.ignore_label,
            aug_rand_hflip=flip,
            aug_scale_min=scale_min,
            aug_scale_max=scale_max,
            dtype=self.dtype,
        )

    def _parse_fn(self, training: bool):
        """serialized record -> (image, labels), through Model Garden's decoder and parser."""
        decoder = segmentation_input.Decoder()
        parse = self.parser().parse_fn(training)
        size = self.train_size if training else self.output_size

        def parse_record(record):
            image, labels = parse(decoder.decode(record))
            labels["masks"] = tf.ensure_shape(labels["masks"], [*size, 1])
            labels["valid_masks"] = tf.ensure_shape(labels["valid_masks"], [*size, 1])
            return tf.ensure_shape(image, [*size, 3]), labels

        return parse_record

    def _blank(self, image: tf.Tensor, labels: dict) -> tuple[tf.Tensor, dict]:
        """A padding example: a zero image whose every pixel is ignore_label (image_info kept:
        a real example's geometry, so code that crops predictions by it still works)."""
        masks = tf.fill(tf.shape(labels["masks"]), tf.constant(self.ignore_label, tf.float32))
        padded = {
            **labels,
            "masks": tf.cast(masks, labels["masks"].dtype),
            "valid_masks": tf.zeros_like(labels["valid_masks"]),
        }
        return tf.zeros_like(image), padded

    def decode_for_serving(self, image_bytes: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """Scalar JPEG (or PNG) string -> (normalised, resized and padded [S, S, 3] image,
        image_info), as the parser prepares evaluation images; image_info[2] is the scale."""
        feature = DenseFeatureConfig()
        image = tf.io.decode_image(image_bytes, channels=3, expand_animations=False)
        image = preprocess_ops.normalize_image(
            image, [m / 255.0 for m in feature.mean], [s / 255.0 for s in feature.stddev]
        )
        size = self.output_size
        image, image_info = preprocess_ops.resize_and_crop_image(image, size, size)
        return tf.cast(tf.ensure_shape(image, [*size, 3]), self.dtype), image_info

    # ------------------------------------------------------------ validation

    def validate(self, splits: Sequence[str] = SPLITS) -> None:
        """Cheap pre-flight checks: at least 2 classes, no empty or corrupt shard, and the first
        records of every shard hold a decodable image and a class mask of its size whose values
        are classes or ignore_label."""
        classes = self.num_classes
        if classes < 2:
            raise UsageError(f"segmentation_input.num_classes = {classes}: need at least 2")
        for split in splits:
            files = self.files(split)
            for path, records in zip(files, shard_heads(files, _SAMPLE_RECORDS), strict=True):
                check_images(path, records)
                for index, record in enumerate(records):
                    problem = self.mask_problem(record)
                    if problem is not None:
                        raise UsageError(f"{path} record {index}: {problem}")

    def mask_problem(self, record: bytes) -> str | None:
        """Why a record's class mask does not fit its image or the classes, or None."""
        feature = tf.train.Example.FromString(record).features.feature
        values = feature[MASK_ENCODED].bytes_list.value
        if len(values) != 1:
            return f"has {len(values)} '{MASK_ENCODED}' values, not one"
        try:
            with Image.open(io.BytesIO(values[0])) as mask:
                if mask.format != "PNG" or mask.mode != "L":
                    return (
                        f"its class mask is a {mask.mode} {mask.format}, not a grayscale PNG of "
                        "class indices (readers would decode a palette PNG's colours)"
                    )
                classes = np.array(mask, np.uint8)
        except OSError:
            return "its class mask is not a PNG image"
        size = tuple(
            (feature[f"image/{key}"].int64_list.value or [0])[0] for key in ("height", "width")
        )
        if classes.shape != size:
            shown = f"{classes.shape[1]}x{classes.shape[0]}"
            return f"its class mask is {shown} but its image {size[1]}x{size[0]}"
        bad = classes[(classes >= self.num_classes) & (classes != self.ignore_label)]
        if bad.size:
            return (
                f"its class mask has value {int(bad[0])}, neither a class of "
                f"segmentation_input.num_classes = {self.num_classes} nor the ignore_label "
                f"{self.ignore_label}"
            )
        return None


def _height_width(size: int | Sequence[int]) -> list[int]:
    """[height, width] of a size given as one side (square) or as (height, width)."""
    if isinstance(size, int):
        return [size, size]
    if len(size) != 2:
        raise UsageError(f"segmentation_input: a size is one side or (height, width), not {size}")
    return [int(side) for side in size]
