"""Converts COCO instance annotations and their images to COCO-schema TFRecords.

Usage: python -m models.data.convert.coco --image_dir=DIR --annotations=instances_train2017.json
    --output_dir=OUT [--split=train] [--num_shards=8] [--include_masks=true] [--help]
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from absl import flags
from PIL import Image, UnidentifiedImageError
from tqdm import tqdm

from models.core.errors import UsageError, require_flags, run_app
from models.data.coco_schema import (
    coco_example,
    ground_truth_file,
    merged_info,
    read_dataset_info,
    write_dataset_info,
)
from models.data.convert.image_folder import _check_output_dir
from models.data.imagenet_schema import to_rgb_jpeg
from models.data.shards import write_examples

if TYPE_CHECKING:
    import tensorflow as tf

BOX_TOLERANCE = 1.0  # Pixels a box may overhang its image (float rounding); it is clipped.
IMAGE_FORMATS = frozenset({"JPEG", "PNG"})
SPLIT_NAME = re.compile(r"[A-Za-z0-9_]+")
COCO_LISTS = ("images", "annotations", "categories")
ANNOTATION_KEYS = ("id", "image_id", "category_id", "bbox", "area", "iscrowd")


@dataclass(frozen=True)
class CocoItem:
    """One image entry of the annotation file, its file and its (kept) annotations."""

    image: dict[str, Any]
    path: Path
    annotations: tuple[dict[str, Any], ...]


@dataclass(frozen=True)
class CocoPlan:
    """The checked contents of an annotation file, ready to write."""

    items: list[CocoItem]
    categories: dict[int, str]
    skipped: int  # Annotations with a zero width or height, left out as Model Garden does.


# ---------------------------------------------------------------- reading the annotation JSON


def _is_int(value: Any) -> bool:
    """Whether value is a JSON integer (not a boolean)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    """Whether value is a finite JSON number (not a boolean)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _load_json(path: str) -> dict[str, Any]:
    """The annotation file's object; UsageError when it is not COCO instances JSON."""
    if not Path(path).is_file():
        raise UsageError(f"--annotations {path} is not a file")
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except json.JSONDecodeError as error:
        raise UsageError(
            f"--annotations {path} is not valid JSON: line {error.lineno} column "
            f"{error.colno}: {error.msg}"
        ) from None
    except UnicodeDecodeError:
        raise UsageError(f"--annotations {path} is not UTF-8 JSON text") from None
    except OSError as error:
        raise UsageError(f"cannot read --annotations {path}: {error.strerror or error}") from None
    missing = [key for key in COCO_LISTS if not isinstance(data, dict) or key not in data]
    wrong = [key for key in COCO_LISTS if key not in missing and not isinstance(data[key], list)]
    if missing or wrong:
        problem = f"lacks {', '.join(missing)}" if missing else f"its {', '.join(wrong)}: not lists"
        raise UsageError(
            f"--annotations {path} is not COCO instances JSON ({problem}); it needs the lists "
            "images, annotations and categories, as instances_train2017.json has"
        )
    return data


def _categories(data: dict[str, Any], source: str) -> dict[int, str]:
    """{category id: name} of the file's categories (ids 1 or more, each once)."""
    names: dict[int, str] = {}
    for index, category in enumerate(data["categories"]):
        if not (
            isinstance(category, dict)
            and _is_int(category.get("id"))
            and isinstance(category.get("name"), str)
        ):
            raise UsageError(f"--annotations {source}: categories[{index}] needs an id and a name")
        if category["id"] < 1 or category["id"] in names:
            problem = "appears twice" if category["id"] in names else "is below 1 (0 is background)"
            raise UsageError(f"--annotations {source}: category id {category['id']} {problem}")
        names[category["id"]] = category["name"]
    if not names:
        raise UsageError(f"--annotations {source} has no categories")
    return names


def _image_problem(image: Any) -> str | None:
    """What is wrong with an images[] entry, if anything."""
    if not isinstance(image, dict):
        return "is not an object"
    if not (_is_int(image.get("id")) or isinstance(image.get("id"), str)):
        return "needs an id (an integer)"
    if not isinstance(image.get("file_name"), str) or not image["file_name"]:
        return f"(id {image['id']}) needs a file_name"
    for key in ("height", "width"):
        if not _is_int(image.get(key)) or image[key] < 1:
            return f"({image['file_name']}) needs a positive integer {key}"
    return None


def _images(data: dict[str, Any], source: str) -> dict[Any, dict[str, Any]]:
    """{image id: entry} of the file's images, each checked and listed once."""
    images: dict[Any, dict[str, Any]] = {}
    for index, image in enumerate(data["images"]):
        problem = _image_problem(image)
        if problem:
            raise UsageError(f"--annotations {source}: images[{index}] {problem}")
        if image["id"] in images:
            raise UsageError(f"--annotations {source}: image id {image['id']} appears twice")
        images[image["id"]] = image
    if not images:
        raise UsageError(f"--annotations {source} has no images")
    return images


def _segmentation_problem(segmentation: Any, image: dict[str, Any]) -> str | None:
    """What is wrong with a polygon or RLE segmentation, if anything."""
    height, width = image["height"], image["width"]
    if isinstance(segmentation, list):
        if not all(isinstance(p, list) and all(map(_is_number, p)) for p in segmentation):
            return "has a segmentation that is neither polygons (lists of numbers) nor RLE"
        if any(len(polygon) % 2 for polygon in segmentation):
            return "has a polygon with an odd number of coordinates"
        return None
    if not isinstance(segmentation, dict) or not {"counts", "size"} <= segmentation.keys():
        return "has a segmentation that is neither polygons nor RLE {counts, size}"
    if segmentation["size"] != [height, width]:
        return (
            f"has an RLE segmentation of size {segmentation['size']} for its {height}x{width} "
            f"image (size is [height, width] = [{height}, {width}])"
        )
    counts = segmentation["counts"]
    if isinstance(counts, str):
        return None
    if not isinstance(counts, list) or not all(_is_int(c) and c >= 0 for c in counts):
        return "has RLE counts that are neither a string nor a list of run lengths"
    if sum(counts) != height * width:
        return f"has RLE counts of {sum(counts)} pixels for its {height}x{width} image"
    return None


def _box_problem(bbox: Any, image: dict[str, Any]) -> str | None:
    """What is wrong with an [x, y, width, height] box, if anything."""
    if not (isinstance(bbox, list) and len(bbox) == 4 and all(map(_is_number, bbox))):
        return f"has bbox {json.dumps(bbox)}, not [x, y, width, height] numbers"
    x, y, w, h = bbox
    if w <= 0 or h <= 0:
        return None  # Degenerate: skipped, as Model Garden does.
    height, width = image["height"], image["width"]
    if (
        min(x, y) < -BOX_TOLERANCE
        or x + w > width + BOX_TOLERANCE
        or y + h > height + BOX_TOLERANCE
    ):
        return (
            f"has bbox {json.dumps(bbox)} outside its {width}x{height} image "
            f"(by more than {BOX_TOLERANCE:g} pixel)"
        )
    return None


def _annotation_problem(
    annotation: dict[str, Any],
    images: Mapping[Any, dict[str, Any]],
    categories: Mapping[int, str],
    include_masks: bool,
) -> str | None:
    """What is wrong with an annotation whose keys are all there, if anything."""
    if not (_is_int(annotation["image_id"]) or isinstance(annotation["image_id"], str)):
        return f"has image_id {json.dumps(annotation['image_id'])}, not an image id"
    if annotation["image_id"] not in images:
        return f"has image_id {annotation['image_id']} that is not in images"
    image = images[annotation["image_id"]]
    category = annotation["category_id"]
    if not _is_int(category) or category not in categories:
        return f"has category_id {json.dumps(category)} that is not in categories"
    if not _is_number(annotation["area"]) or annotation["area"] < 0:
        return f"has area {json.dumps(annotation['area'])}, not a number of pixels"
    if annotation["iscrowd"] not in (0, 1) or not _is_int(annotation["iscrowd"]):
        return f"has iscrowd {json.dumps(annotation['iscrowd'])}, not 0 or 1"
    problem = _box_problem(annotation["bbox"], image)
    if problem is None and include_masks:
        problem = _segmentation_problem(annotation["segmentation"], image)
    return problem


def _annotation_name(index: int, annotation: Any, images: Mapping[Any, dict[str, Any]]) -> str:
    """`annotation <id> (image <file_name>)`, as far as the annotation tells."""
    if not isinstance(annotation, dict):
        return f"annotations[{index}]"
    name = f"annotation {annotation['id'] if _is_int(annotation.get('id')) else f'#{index}'}"
    image_id = annotation.get("image_id")
    image = images.get(image_id) if _is_int(image_id) or isinstance(image_id, str) else None
    return f"{name} (image {image['file_name']})" if image else name


def _check_annotation(
    index: int,
    annotation: Any,
    images: Mapping[Any, dict[str, Any]],
    categories: Mapping[int, str],
    include_masks: bool,
) -> str | None:
    """What is wrong with annotations[index], if anything."""
    if not isinstance(annotation, dict):
        return "is not an object"
    keys = ANNOTATION_KEYS + (("segmentation",) if include_masks else ())
    missing = [key for key in keys if key not in annotation]
    if missing:
        return f"lacks {', '.join(missing)}"
    if not _is_int(annotation["id"]):
        return "has an id that is not an integer"
    return _annotation_problem(annotation, images, categories, include_masks)


def _group_annotations(
    data: dict[str, Any],
    images: Mapping[Any, dict[str, Any]],
    categories: Mapping[int, str],
    include_masks: bool,
    source: str,
) -> tuple[dict[Any, list[dict[str, Any]]], int]:
    """({image id: its annotations}, number skipped for a zero width or height)."""
    grouped: dict[Any, list[dict[str, Any]]] = {image_id: [] for image_id in images}
    seen, skipped = set(), 0
    for index, annotation in enumerate(data["annotations"]):
        problem = _check_annotation(index, annotation, images, categories, include_masks)
        if problem is None and annotation["id"] in seen:
            problem = "appears twice"
        if problem:
            name = _annotation_name(index, annotation, images)
            raise UsageError(f"--annotations {source}: {name} {problem}")
        seen.add(annotation["id"])
        if min(annotation["bbox"][2:]) <= 0:
            skipped += 1
            continue
        grouped[annotation["image_id"]].append(annotation)
    return grouped, skipped


def plan(image_dir: str, annotations: str, include_masks: bool = True) -> CocoPlan:
    """The checked images (in file order), categories and skip count of an annotation file."""
    if not Path(image_dir).is_dir():
        raise UsageError(f"--image_dir {image_dir} is not a directory")
    data = _load_json(annotations)
    categories = _categories(data, annotations)
    images = _images(data, annotations)
    grouped, skipped = _group_annotations(data, images, categories, include_masks, annotations)
    items = [
        CocoItem(image, Path(image_dir) / image["file_name"], tuple(grouped[image_id]))
        for image_id, image in images.items()
    ]
    return CocoPlan(items, categories, skipped)


# ---------------------------------------------------------------- checking the image files


def _image_file_problem(item: CocoItem) -> str | None:
    """What is wrong with an image file (read from its header only), if anything."""
    try:
        with Image.open(item.path) as image:
            kind, size = image.format, image.size
    except UnidentifiedImageError:
        return f"cannot read image {item.path}: not a JPEG or PNG file"
    except OSError as error:
        return f"cannot read image {item.path}: {error.strerror or error}"
    if kind not in IMAGE_FORMATS:
        return f"cannot read image {item.path}: it is {kind}, not a JPEG or PNG file"
    expected = (item.image["width"], item.image["height"])
    if size != expected:
        return (
            f"image {item.path} is {size[0]}x{size[1]} but --annotations says "
            f"{expected[0]}x{expected[1]} (image id {item.image['id']})"
        )
    return None


def check_images(items: list[CocoItem], progress: bool = False) -> None:
    """UsageError naming the first missing, unreadable or wrongly sized image file."""
    missing = [item for item in items if not item.path.is_file()]
    if missing:
        more = f"; {len(missing) - 1} more images are missing" if len(missing) > 1 else ""
        raise UsageError(
            f"image {missing[0].path} (image id {missing[0].image['id']} of --annotations) "
            f"does not exist{more}"
        )
    # Shown after a second only, and wiped before an error line (leave=False).
    bar = tqdm(items, desc="checking", unit="img", disable=not progress, delay=1, leave=False)
    with bar:
        for item in bar:
            problem = _image_file_problem(item)
            if problem:
                raise UsageError(problem)


# ---------------------------------------------------------------- conversion


def _item_example(
    item: CocoItem, categories: Mapping[int, str], include_masks: bool
) -> tf.train.Example:
    """The record of one image, re-encoded to RGB JPEG when it is not one already."""
    try:
        encoded, _, _ = to_rgb_jpeg(item.path.read_bytes())
    except UnidentifiedImageError:
        raise UsageError(f"cannot read image {item.path}: not a JPEG or PNG file") from None
    except OSError as error:
        raise UsageError(f"cannot read image {item.path}: {error}") from None
    return coco_example(item.image, encoded, item.annotations, categories, include_masks)


def _split_shards(output_dir: str, split: str) -> list[str]:
    """Names of the split's shards in output_dir (none when it does not exist); TensorFlow
    only lists remote (gs://) folders, so that checks of local data stay instant."""
    if "://" in output_dir:
        import tensorflow as tf

        names = tf.io.gfile.listdir(output_dir) if tf.io.gfile.isdir(output_dir) else []
    else:
        names = os.listdir(output_dir) if os.path.isdir(output_dir) else []
    return sorted(name for name in names if name.startswith(f"{split}-"))


def _check_output(output_dir: str, split: str) -> None:
    """UsageError when output_dir already holds the split's shards (stale ones would be read)."""
    existing = _split_shards(output_dir, split)
    if existing:
        raise UsageError(
            f"--output_dir {output_dir} already holds {split} shards ({existing[0]}, ...); "
            "use an empty directory or another --split"
        )


def _copy_atomically(source: str, target: str) -> None:
    """Copies source beside target, then renames it over target (nothing when they are one)."""
    import tensorflow as tf

    if "://" not in target and os.path.realpath(source) == os.path.realpath(target):
        return
    tmp = f"{target}.tmp"
    try:
        tf.io.gfile.copy(source, tmp, overwrite=True)
        tf.io.gfile.rename(tmp, target, overwrite=True)
    except BaseException:
        if tf.io.gfile.exists(tmp):
            tf.io.gfile.remove(tmp)
        raise


def _write(
    coco: CocoPlan,
    annotations: str,
    output_dir: str,
    split: str,
    num_shards: int,
    include_masks: bool,
    info: dict[str, Any],
    progress: bool,
) -> None:
    """Writes the shards, the annotation copy and dataset_info.json, or none of the shards."""
    import tensorflow as tf

    tf.io.gfile.makedirs(output_dir)
    to_example = partial(_item_example, categories=coco.categories, include_masks=include_masks)
    try:
        write_examples(coco.items, to_example, output_dir, split, num_shards, progress)
        _copy_atomically(annotations, os.path.join(output_dir, ground_truth_file(split)))
        write_dataset_info(output_dir, info)
    except BaseException:  # a bad image or an interrupt: no partial split is left behind
        for name in _split_shards(output_dir, split):  # held none before (_check_output)
            tf.io.gfile.remove(os.path.join(output_dir, name))
        raise


def convert(
    image_dir: str,
    annotations: str,
    output_dir: str,
    split: str = "train",
    num_shards: int = 8,
    include_masks: bool = True,
    progress: bool = False,
) -> dict[str, Any]:
    """Writes `<split>-*-of-*` shards, instances_<split>.json and dataset_info.json after
    checking everything; returns the info written plus `skipped_annotations` (zero-size boxes)."""
    if not SPLIT_NAME.fullmatch(split):
        raise UsageError(f"--split must be letters, digits and underscores, got '{split}'")
    if num_shards < 1:
        raise UsageError(f"--num_shards must be at least 1, got {num_shards}")
    _check_output_dir(output_dir, ("image_dir", image_dir))
    coco = plan(image_dir, annotations, include_masks)
    info = merged_info(read_dataset_info(output_dir), split, len(coco.items), coco.categories)
    _check_output(output_dir, split)
    check_images(coco.items, progress)
    _write(coco, annotations, output_dir, split, num_shards, include_masks, info, progress)
    return {**info, "skipped_annotations": coco.skipped}


# ---------------------------------------------------------------- command line


def define_flags() -> None:
    """Defines the converter's flags (only when run as a program, so importing it is side-free)."""
    flags.DEFINE_string("image_dir", None, "Folder of the split's images (COCO train2017/).")
    flags.DEFINE_string(
        "annotations", None, "COCO instances JSON of those images (instances_train2017.json)."
    )
    flags.DEFINE_string(
        "output_dir", None, "Where the TFRecord shards are written (local or gs://)."
    )
    flags.DEFINE_string("split", "train", "Split name: shards <split>-*-of-*.")
    flags.DEFINE_integer("num_shards", 8, "Number of <split>-*-of-* TFRecord files.")
    flags.DEFINE_boolean(
        "include_masks", True, "Write each instance's mask as a PNG (image/object/mask)."
    )


def main(argv: list[str]) -> None:
    """Converts with the parsed flags and prints what was written."""
    f = flags.FLAGS
    require_flags(argv, "image_dir", "annotations", "output_dir")
    info = convert(
        f.image_dir, f.annotations, f.output_dir, f.split, f.num_shards, f.include_masks, True
    )
    skipped = info["skipped_annotations"]
    note = f"; skipped {skipped} annotations of zero width or height" if skipped else ""
    print(
        f"wrote {info[f'num_{f.split}_examples']} {f.split} examples, "
        f"{ground_truth_file(f.split)} and dataset_info.json to {f.output_dir}{note}"
    )


if __name__ == "__main__":
    define_flags()
    run_app(main)
