"""COCO-schema TFRecords (as Model Garden's create_coco_tf_record writes them) -> per-replica
batches of images and anchor labels for single-stage detectors, or RPN labels, boxes and masks
for two-stage ones (Faster/Mask R-CNN). Model Garden's decoder and RetinaNet or Mask R-CNN
parser do the per-example work (flip, scale jitter, resize, anchor matching, mask crops); this
module reads the shards, pads evaluation to whole batches and checks the data before a run."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import gin
import tensorflow as tf
from official.vision.dataloaders import maskrcnn_input, retinanet_input, tf_example_decoder
from official.vision.ops import anchor, preprocess_ops

from models.core.errors import UsageError
from models.core.precision import DTYPES
from models.data.anchors import ANCHOR_LAYOUTS, RpnAnchors, SsdAnchors
from models.data.folder import ShardedFolder
from models.data.imagenet_schema import INFO_FILE, SPLITS
from models.data.reader import InputReader, blank_like
from models.data.records import check_images, check_split, shard_heads

PAD_SOURCE_ID = -1  # evaluation padding: aggregate_logs drops these rows
_SAMPLE_RECORDS = 2  # images decoded per shard before a run


@dataclass(frozen=True)
class RcnnTargets:
    """What a two-stage task asks of the input instead of RetinaNet's anchor labels: Model
    Garden's Mask R-CNN parser outputs (RPN labels on `rpn_anchors`, padded boxes and classes)
    plus, with `include_mask`, each instance's mask cropped to its box at `mask_crop_size`."""

    include_mask: bool = True
    mask_crop_size: int = 112


@gin.configurable("detection_input", denylist=["anchors", "rcnn"])
class DetectionInput(ShardedFolder):
    """Per-replica (image, labels) datasets of a COCO-schema directory: training examples are
    flipped and scale-jittered, evaluation examples carry the ground truth for COCO AP.

    `num_classes` counts the background (class 0), as Model Garden does (COCO: 91); by default
    it is the data's largest category id + 1, from dataset_info.json. Anchors are the
    layout named by `anchors` (models.data.anchors.ANCHOR_LAYOUTS): by default the multiscale
    `anchors` grid, or a two-stage model's `rpn_anchors`; `rcnn` switches the labels from
    RetinaNet's to Faster/Mask R-CNN's (both set by the task for its model, not by gin).
    """

    info_integers = tuple(f"num_{split}_examples" for split in SPLITS)

    def __init__(
        self,
        data_dir: str | None = None,
        builtin: str = "digit_scenes",
        train_pattern: str = "train-*",
        eval_pattern: str = "validation-*",
        image_size: int = 640,
        num_classes: int | None = None,
        max_num_instances: int = 100,
        aug_rand_hflip: bool = True,
        aug_scale_min: float = 1.0,
        aug_scale_max: float = 1.0,
        skip_crowd_during_training: bool = True,
        shuffle_buffer: int = 1000,
        cycle_length: int = 16,
        dtype: str = "float32",
        anchors: str | None = None,
        rcnn: RcnnTargets | None = None,
    ):
        if dtype not in DTYPES:
            raise UsageError(f"detection_input.dtype must be one of {', '.join(DTYPES)}")
        if image_size < 1 or max_num_instances < 1 or not 0 < aug_scale_min <= aug_scale_max:
            raise UsageError(
                "detection_input: image_size and max_num_instances must be positive and "
                "0 < aug_scale_min <= aug_scale_max"
            )
        super().__init__(data_dir, builtin)
        self.patterns = {"train": train_pattern, "validation": eval_pattern}
        self.image_size, self._num_classes = image_size, num_classes
        self.max_num_instances = max_num_instances
        self.augmentation = (aug_rand_hflip, aug_scale_min, aug_scale_max)
        self.skip_crowd_during_training = skip_crowd_during_training
        self.shuffle_buffer, self.cycle_length = shuffle_buffer, cycle_length
        self.dtype = dtype
        self.rcnn = rcnn
        layout = anchors or ("anchors" if rcnn is None else "rpn_anchors")
        self.anchors = ANCHOR_LAYOUTS[layout]()
        self.anchors.check_image_size(image_size, "detection_input.image_size")

    # ------------------------------------------------------------ files and counts

    @property
    def num_classes(self) -> int:
        """Classes the model predicts, background included: the largest category id + 1."""
        if self._num_classes is not None:
            return self._num_classes
        categories = self.dataset_info().get("categories")
        if not categories:
            raise UsageError(
                f"{os.path.join(self.data_dir, INFO_FILE)} lists no categories; convert the data "
                "with `python -m models.data.convert.coco` or set detection_input.num_classes"
            )
        return max(int(category["id"]) for category in categories) + 1

    def annotation_file(self, split: str) -> str | None:
        """The split's COCO instances JSON beside the shards (pycocotools' ground truth), or
        None: then the ground truth comes from the records themselves."""
        path = os.path.join(self.data_dir, f"instances_{check_split(split)}.json")
        return path if tf.io.gfile.exists(path) else None

    # ------------------------------------------------------------ datasets

    def reader(self, split: str) -> InputReader:
        """(images, labels): Model Garden's RetinaNet or Mask R-CNN parser outputs. Evaluation
        reads every image once, then blank images whose source_id is PAD_SOURCE_ID."""
        training = split == "train"
        return InputReader(
            parse=self._parse_fn(training),
            padding=blank_like(_blank),
            shuffle_buffer=self.shuffle_buffer,
            cycle_length=self.cycle_length,
        )

    def _parse_fn(self, training: bool):
        """serialized record -> (image, labels), through Model Garden's decoder and parser;
        masks are decoded for training only (COCO mask AP reads the instances JSON)."""
        masks = training and self.rcnn is not None and self.rcnn.include_mask
        decoder = tf_example_decoder.TfExampleDecoder(include_mask=masks)
        parser = self.parser() if self.rcnn is None else self.rcnn_parser(masks)
        parse = parser.parse_fn(training)
        return lambda record: parse(decoder.decode(record))

    def parser(self) -> retinanet_input.Parser:
        """Model Garden's RetinaNet parser with this input's augmentation and anchors."""
        if isinstance(self.anchors, SsdAnchors):
            return DefaultBoxParser(
                self.anchors,
                output_size=[self.image_size, self.image_size],
                **self._augmentation_settings(),
            )
        return retinanet_input.Parser(
            match_threshold=self.anchors.match_threshold,
            unmatched_threshold=self.anchors.unmatched_threshold,
            **self._parser_settings(),
        )

    def rcnn_parser(self, include_mask: bool) -> maskrcnn_input.Parser:
        """Model Garden's Mask R-CNN parser with this input's augmentation, RPN anchors and
        mask crop size (an input built with `rcnn` only)."""
        anchors = self.anchors
        listed = {"anchors": anchors} if anchors.scales else {}
        return (ListedScalesRpnParser if listed else maskrcnn_input.Parser)(
            **listed,
            rpn_match_threshold=anchors.match_threshold,
            rpn_unmatched_threshold=anchors.unmatched_threshold,
            rpn_batch_size_per_im=anchors.batch_size_per_im,
            rpn_fg_fraction=anchors.fg_fraction,
            include_mask=include_mask,
            mask_crop_size=self.rcnn.mask_crop_size,
            **self._parser_settings(),
        )

    def _parser_settings(self) -> dict:
        """What both of Model Garden's parsers take alike: sizes, anchor grid, augmentation."""
        anchors = self.anchors
        return {
            "output_size": [self.image_size, self.image_size],
            "min_level": anchors.min_level,
            "max_level": anchors.max_level,
            "num_scales": anchors.num_scales,
            "aspect_ratios": list(anchors.aspect_ratios),
            "anchor_size": anchors.anchor_size,
            **self._augmentation_settings(),
        }

    def _augmentation_settings(self) -> dict:
        """Flip, scale jitter, crowds, instances and dtype, as every parser takes them."""
        flip, scale_min, scale_max = self.augmentation
        return {
            "aug_rand_hflip": flip,
            "aug_scale_min": scale_min,
            "aug_scale_max": scale_max,
            "skip_crowd_during_training": self.skip_crowd_during_training,
            "max_num_instances": self.max_num_instances,
            "dtype": self.dtype,
        }

    def fixed_anchor_boxes(self) -> dict[str, tf.Tensor] | None:
        """The anchors a model cannot make from its own config (RPN anchors of listed
        `scales`), level -> [cells, cells, anchors * 4]; None where it makes them itself."""
        if isinstance(self.anchors, RpnAnchors) and self.anchors.scales:
            boxes = self.anchors.boxes(self.image_size)
            return {level: tf.constant(grid) for level, grid in boxes.items()}
        return None

    def decode_for_serving(self, image_bytes: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """Scalar JPEG string -> (normalised, resized and padded image, image_info), as the
        parser prepares evaluation images; image_info[2] is the scale back to the original."""
        image = tf.io.decode_jpeg(image_bytes, channels=3)
        image = preprocess_ops.normalize_image(image)
        size = [self.image_size, self.image_size]
        image, image_info = preprocess_ops.resize_and_crop_image(
            image, size, padded_size=size, aug_scale_min=1.0, aug_scale_max=1.0
        )
        return tf.cast(tf.ensure_shape(image, [*size, 3]), self.dtype), image_info

    # ------------------------------------------------------------ validation

    def validate(self, splits: Sequence[str] = SPLITS) -> None:
        """Cheap pre-flight checks: categories known, no empty or corrupt shard, and the first
        images of every shard decode."""
        classes = self.num_classes
        if classes < 2:
            raise UsageError(f"detection_input.num_classes = {classes}: need at least 2")
        for split in splits:
            files = self.files(split)
            for path, records in zip(files, shard_heads(files, _SAMPLE_RECORDS), strict=True):
                check_images(path, records)


class DefaultBoxParser(retinanet_input.Parser):
    """Model Garden's RetinaNet parser labelling SSD's fixed default boxes (`SsdAnchors`)
    instead of its multiscale grid: the same augmentation, matching and label layout."""

    def __init__(self, anchors: SsdAnchors, **settings):
        grid = dict.fromkeys(("min_level", "max_level", "num_scales", "aspect_ratios"))
        super().__init__(
            **grid,
            anchor_size=None,
            match_threshold=anchors.match_threshold,
            unmatched_threshold=anchors.unmatched_threshold,
            pad=False,  # to the output size itself: no 2**max_level for SSD's 300 px
            **settings,
        )
        self._boxes = anchors.boxes()

    def _default_boxes(self, image_size) -> dict[str, tf.Tensor]:
        return {level: tf.constant(boxes) for level, boxes in self._boxes.items()}

    def _parse_train_data(self, data, anchor_labeler=None, input_anchor=None):
        return super()._parse_train_data(data, anchor_labeler, self._default_boxes)

    def _parse_eval_data(self, data, anchor_labeler=None, input_anchor=None):
        return super()._parse_eval_data(data, anchor_labeler, self._default_boxes)


class ListedScalesRpnParser(maskrcnn_input.Parser):
    """Model Garden's Mask R-CNN parser on RPN anchors of listed scales (`RpnAnchors.scales`,
    which its anchor generator cannot lay out): its output with the anchors replaced and, in
    training, the RPN labels computed again on them by its own labeler."""

    def __init__(self, anchors: RpnAnchors, **settings):
        super().__init__(**settings)
        self._labeler = anchor.RpnAnchorLabeler(
            self._rpn_match_threshold,
            self._rpn_unmatched_threshold,
            self._rpn_batch_size_per_im,
            self._rpn_fg_fraction,
        )
        self._boxes = anchors.boxes(self._output_size[0])

    def _anchor_boxes(self) -> dict[str, tf.Tensor]:
        return {level: tf.constant(boxes) for level, boxes in self._boxes.items()}

    def _parse_train_data(self, data):
        image, labels = super()._parse_train_data(data)
        real = labels["gt_classes"] >= 0  # padding is -1
        boxes = tf.boolean_mask(labels["gt_boxes"], real)
        classes = tf.cast(tf.boolean_mask(labels["gt_classes"], real), tf.float32)
        anchor_boxes = self._anchor_boxes()
        scores, box_targets = self._labeler.label_anchors(anchor_boxes, boxes, classes[:, None])
        labels.update(
            anchor_boxes=anchor_boxes, rpn_score_targets=scores, rpn_box_targets=box_targets
        )
        return image, labels

    def _parse_eval_data(self, data):
        image, labels = super()._parse_eval_data(data)
        labels["anchor_boxes"] = self._anchor_boxes()
        return image, labels


def _blank(image: tf.Tensor, labels: dict) -> tuple[tf.Tensor, dict]:
    """A padding example: zeros everywhere, source_id PAD_SOURCE_ID, no ground truth."""
    image, labels = tf.nest.map_structure(tf.zeros_like, (image, labels))
    labels["groundtruths"]["source_id"] = tf.constant(PAD_SOURCE_ID, tf.int64)
    return image, labels
