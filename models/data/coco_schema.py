"""The schema of COCO detection/instance-segmentation TFRecords, as Model Garden writes them.

One tf.train.Example per image with exactly the features of Model Garden's
`official/vision/data/create_coco_tf_record.py` (boxes, classes, crowd flags, areas and
PNG instance masks), plus the per-split dataset_info.json. TensorFlow, Model Garden and
pycocotools are imported lazily so that CLI errors stay instant.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from models.core.errors import UsageError
from models.data.imagenet_schema import INFO_FILE

if TYPE_CHECKING:
    import numpy as np
    import tensorflow as tf

IMAGE_FORMAT = "jpg"  # What create_coco_tf_record writes as image/format (images are JPEG).
XMIN, XMAX = "image/object/bbox/xmin", "image/object/bbox/xmax"
YMIN, YMAX = "image/object/bbox/ymin", "image/object/bbox/ymax"
CLASS_TEXT, CLASS_LABEL = "image/object/class/text", "image/object/class/label"
IS_CROWD, AREA, MASK = "image/object/is_crowd", "image/object/area", "image/object/mask"
MIN_POLYGON_COORDINATES = 6  # Fewer than 3 points enclose nothing (and 4 read as a box).


def ground_truth_file(split: str) -> str:
    """Name of the split's annotation JSON beside its shards: `instances_<split>.json`."""
    return f"instances_{split}.json"


def count_key(split: str) -> str:
    """The dataset_info.json key of a split's number of records."""
    return f"num_{split}_examples"


def polygons(segmentation: list) -> list:
    """The polygons of a polygon segmentation that enclose an area (3 points or more)."""
    return [polygon for polygon in segmentation if len(polygon) >= MIN_POLYGON_COORDINATES]


def instance_mask(segmentation: list | dict, height: int, width: int) -> np.ndarray:
    """The [height, width] uint8 0/1 mask of a COCO segmentation: polygons (their union),
    uncompressed RLE (crowds) or compressed RLE, decoded by pycocotools as COCO.annToRLE does."""
    import numpy as np
    from pycocotools import mask as coco_mask

    if isinstance(segmentation, list):
        kept = polygons(segmentation)
        if not kept:
            return np.zeros((height, width), np.uint8)
        rle = coco_mask.merge(coco_mask.frPyObjects(kept, height, width))
    elif isinstance(segmentation["counts"], list):
        rle = coco_mask.frPyObjects(segmentation, height, width)
    else:
        rle = segmentation
    return coco_mask.decode(rle).astype(np.uint8)


def _clipped_box(bbox: Sequence[float], height: int, width: int) -> tuple[float, ...]:
    """(xmin, xmax, ymin, ymax) of a COCO [x, y, w, h] box, clipped to the image, normalised."""
    x, y, w, h = (float(value) for value in bbox)
    return (
        max(x, 0.0) / width,
        min(x + w, width) / width,
        max(y, 0.0) / height,
        min(y + h, height) / height,
    )


def object_features(
    annotations: Sequence[Mapping[str, Any]],
    height: int,
    width: int,
    category_names: Mapping[int, str],
    include_masks: bool,
) -> dict[str, tf.train.Feature]:
    """The image/object/* features of an image's annotations ({} when it has none, as in
    Model Garden); boxes are normalised to [0, 1]."""
    from official.vision.data.tfrecord_lib import convert_to_feature, encode_mask_as_png

    if not annotations:
        return {}
    boxes = [_clipped_box(a["bbox"], height, width) for a in annotations]
    labels = [int(a["category_id"]) for a in annotations]
    features = {
        key: convert_to_feature([box[index] for box in boxes], "float_list")
        for index, key in enumerate((XMIN, XMAX, YMIN, YMAX))
    }
    features[CLASS_TEXT] = convert_to_feature([category_names[i].encode() for i in labels])
    features[CLASS_LABEL] = convert_to_feature(labels, "int64_list")
    features[IS_CROWD] = convert_to_feature([int(a["iscrowd"]) for a in annotations], "int64_list")
    features[AREA] = convert_to_feature([float(a["area"]) for a in annotations], "float_list")
    if include_masks:
        masks = [instance_mask(a["segmentation"], height, width) for a in annotations]
        features[MASK] = convert_to_feature([encode_mask_as_png(m) for m in masks], "bytes_list")
    return features


def coco_example(
    image: Mapping[str, Any],
    encoded_jpeg: bytes,
    annotations: Sequence[Mapping[str, Any]],
    category_names: Mapping[int, str],
    include_masks: bool = True,
) -> tf.train.Example:
    """The record of one COCO image entry ({id, file_name, height, width}) and its annotations."""
    import tensorflow as tf
    from official.vision.data.tfrecord_lib import image_info_to_feature_dict

    height, width = int(image["height"]), int(image["width"])
    feature = image_info_to_feature_dict(
        height, width, image["file_name"], image["id"], encoded_jpeg, IMAGE_FORMAT
    )
    feature.update(object_features(annotations, height, width, category_names, include_masks))
    return tf.train.Example(features=tf.train.Features(feature=feature))


def _read_text(path: str) -> str | None:
    """The text of a local or remote (gs://) file, None when there is none; TensorFlow is
    imported for remote paths only, so that checks of local data stay instant."""
    if "://" not in path:
        return Path(path).read_text(encoding="utf-8") if os.path.isfile(path) else None
    import tensorflow as tf

    if not tf.io.gfile.exists(path):
        return None
    with tf.io.gfile.GFile(path) as f:
        return f.read()


def read_dataset_info(output_dir: str | os.PathLike) -> dict[str, Any]:
    """The COCO dataset_info.json of output_dir ({} when there is none); UsageError when it
    is unreadable or describes another schema."""
    path = os.path.join(os.fspath(output_dir), INFO_FILE)
    try:
        text = _read_text(path)
        info = {} if text is None else json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise UsageError(f"{path} is not valid JSON ({error}); remove it") from None
    if not isinstance(info, dict) or (info and "categories" not in info):
        raise UsageError(f"{path} is not a COCO dataset_info.json; use another --output_dir")
    return info


def merged_info(
    info: Mapping[str, Any], split: str, num_examples: int, categories: Mapping[int, str]
) -> dict[str, Any]:
    """info with the split's count, categories [{id, name}] and num_classes (the largest
    category id); UsageError when info's splits have other categories."""
    listed = [{"id": i, "name": categories[i]} for i in sorted(categories)]
    if info.get("categories", listed) != listed:
        raise UsageError(
            f"the categories of --annotations differ from those in --output_dir's {INFO_FILE} "
            "(written for its other splits); use another --output_dir"
        )
    return {
        **info,
        "num_classes": max(categories, default=0),
        "categories": listed,
        count_key(split): num_examples,
    }


def write_dataset_info(output_dir: str | os.PathLike, info: Mapping[str, Any]) -> None:
    """Writes dataset_info.json atomically (readers see the old or the new file, never half)."""
    from models.core.files import write_atomically

    write_atomically(os.path.join(os.fspath(output_dir), INFO_FILE), json.dumps(info, indent=2))
