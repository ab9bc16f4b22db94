"""Converts a Pascal VOC segmentation folder to the semantic-segmentation TFRecords that DeepLab's
readers (the TPU reference's build_voc2012_data.py and Model Garden's segmentation_input) read.

Input, as VOCdevkit/VOC2012 lays it out: JPEGImages/<id>.jpg, SegmentationClass/<id>.png (a
palette or grayscale PNG whose pixel values are class indices, 255 = void) and
ImageSets/Segmentation/{train,val}.txt listing the ids. Output: `train-*-of-*` and
`validation-*-of-*` shards (VOC's val list is the validation split) and dataset_info.json.

Usage: python -m models.data.convert.voc --voc_dir=VOCdevkit/VOC2012 --output_dir=OUT
    [--train_shards=4] [--validation_shards=4] [--classes=background,cat,dog | --classes_file=F]
"""

from __future__ import annotations

import io
import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from absl import flags
from PIL import Image, UnidentifiedImageError
from tqdm import tqdm

from models.core.errors import UsageError, require_flags, run_app
from models.data.imagenet_schema import (
    ENCODED,
    INFO_FILE,
    SPLIT_PREFIXES,
    bytes_feature,
    int_feature,
    to_rgb_jpeg,
)
from models.data.shards import write_examples

if TYPE_CHECKING:
    import tensorflow as tf

VOC_CLASSES = (
    "background",
    "aeroplane",
    "bicycle",
    "bird",
    "boat",
    "bottle",
    "bus",
    "car",
    "cat",
    "chair",
    "cow",
    "diningtable",
    "dog",
    "horse",
    "motorbike",
    "person",
    "pottedplant",
    "sheep",
    "sofa",
    "train",
    "tvmonitor",
)
IGNORE_LABEL = 255  # VOC's void: object boundaries and unlabelled pixels.
IMAGE_DIR, MASK_DIR = "JPEGImages", "SegmentationClass"
LIST_DIR = os.path.join("ImageSets", "Segmentation")
SPLITS = {"train": "train", "val": "validation"}  # VOC list -> shard (pipeline) split name.
MASK_ENCODED = "image/segmentation/class/encoded"
MASK_FORMAT = "image/segmentation/class/format"
IMAGE_FORMATS = frozenset({"JPEG", "PNG"})
MASK_MODES = frozenset({"P", "L"})  # Palette or grayscale: pixel values are class indices.


@dataclass(frozen=True)
class VocItem:
    """One listed id with its image and class-map files."""

    id: str
    image: Path
    mask: Path


@lru_cache(maxsize=1)
def _palette() -> np.ndarray:
    """VOC's colour map, computed once (see palette)."""
    colours = np.zeros((256, 3), np.uint8)
    for index in range(256):
        value, rgb = index, [0, 0, 0]
        for bit in range(7, -1, -1):
            for channel in range(3):
                rgb[channel] |= ((value >> channel) & 1) << bit
            value >>= 3
        colours[index] = rgb
    return colours


def palette() -> np.ndarray:
    """VOC's [256, 3] uint8 colour map (class k -> colour k, void 255 -> cream), for drawing
    class maps and predicted masks as VOC's SegmentationClass PNGs show them."""
    return _palette().copy()


def colourize(class_map: np.ndarray) -> Image.Image:
    """A palette ("P") PNG-ready image of a [H, W] class map in VOC's colours."""
    image = Image.fromarray(np.asarray(class_map, np.uint8), mode="P")
    image.putpalette(_palette().ravel().tolist())
    return image


# ---------------------------------------------------------------- classes and lists


def check_classes(classes: Sequence[str]) -> list[str]:
    """The class names as a list (background first); UsageError when they are fewer than 2,
    blank, repeated, or so many that a class index would collide with the void value 255."""
    names = [str(name).strip() for name in classes]
    if len(names) < 2:
        raise UsageError(f"--classes needs at least 2 names (background first), got {len(names)}")
    if len(names) > IGNORE_LABEL:
        raise UsageError(f"--classes has {len(names)} names; at most {IGNORE_LABEL} (255 is void)")
    if not all(names):
        raise UsageError("--classes has an empty name")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise UsageError(f"--classes names '{repeated[0]}' more than once")
    return names


def read_classes(path: str) -> list[str]:
    """Class names of a text file, one a line (blank lines skipped), checked."""
    if not Path(path).is_file():
        raise UsageError(f"--classes_file {path} is not a file")
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return check_classes([line.strip() for line in lines if line.strip()])


def read_list(voc_dir: Path, name: str) -> list[str]:
    """The ids of ImageSets/Segmentation/<name>.txt; UsageError when it is missing, empty or
    lists an id twice."""
    path = voc_dir / LIST_DIR / f"{name}.txt"
    if not path.is_file():
        raise UsageError(f"--voc_dir {voc_dir} has no {LIST_DIR}/{name}.txt listing the {name} ids")
    ids = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not ids:
        raise UsageError(f"{path} lists no ids")
    seen: set[str] = set()
    for image_id in ids:
        if image_id in seen:
            raise UsageError(f"{path} lists id {image_id} twice")
        seen.add(image_id)
    return ids


def plan(voc_dir: str) -> dict[str, list[VocItem]]:
    """{pipeline split: its items}, once every listed image and mask file is found."""
    root = Path(voc_dir)
    if not root.is_dir():
        raise UsageError(f"--voc_dir {voc_dir} is not a directory")
    lists = {name: read_list(root, name) for name in SPLITS}
    both = sorted(set(lists["train"]) & set(lists["val"]))
    if both:
        raise UsageError(f"id {both[0]} is in both {LIST_DIR}/train.txt and val.txt")
    items = {}
    for name, split in SPLITS.items():
        items[split] = [
            VocItem(i, root / IMAGE_DIR / f"{i}.jpg", root / MASK_DIR / f"{i}.png")
            for i in lists[name]
        ]
        for item in items[split]:
            for path, what in ((item.image, "image"), (item.mask, "class mask")):
                if not path.is_file():
                    raise UsageError(f"{what} {path} of id {item.id} ({name}.txt) does not exist")
    return items


# ---------------------------------------------------------------- checking the files


def class_map(path: Path) -> np.ndarray:
    """The [H, W] uint8 class indices of a palette or grayscale PNG."""
    try:
        with Image.open(path) as mask:
            kind, mode = mask.format, mask.mode
            if kind != "PNG" or mode not in MASK_MODES:
                what = f"a {mode} {kind}" if kind == "PNG" else f"{kind or 'unknown'} data"
                raise UsageError(
                    f"class mask {path} is {what}; it must be a palette (P) or grayscale (L) "
                    "PNG whose pixel values are class indices"
                )
            return np.array(mask, np.uint8)
    except UnidentifiedImageError:
        raise UsageError(f"cannot read class mask {path}: not a PNG file") from None
    except OSError as error:
        raise UsageError(f"cannot read class mask {path}: {error.strerror or error}") from None


def _image_size(path: Path) -> tuple[int, int]:
    """(width, height) of a JPEG or PNG image, read from its header."""
    try:
        with Image.open(path) as image:
            kind, size = image.format, image.size
    except UnidentifiedImageError:
        raise UsageError(f"cannot read image {path}: not a JPEG or PNG file") from None
    except OSError as error:
        raise UsageError(f"cannot read image {path}: {error.strerror or error}") from None
    if kind not in IMAGE_FORMATS:
        raise UsageError(f"cannot read image {path}: it is {kind}, not a JPEG or PNG file")
    return size


def pixel_counts(item: VocItem, num_classes: int) -> np.ndarray:
    """[num_classes + 1] pixels of each class, then void, of an item whose mask matches its
    image's size and holds only class indices and the void value."""
    width, height = _image_size(item.image)
    mask = class_map(item.mask)
    if mask.shape != (height, width):
        raise UsageError(
            f"class mask {item.mask} is {mask.shape[1]}x{mask.shape[0]} but its image "
            f"{item.image} is {width}x{height}"
        )
    counts = np.bincount(mask.ravel(), minlength=256)
    bad = np.flatnonzero(counts[num_classes:IGNORE_LABEL])
    if bad.size:
        raise UsageError(
            f"class mask {item.mask} has value {num_classes + int(bad[0])}: values must be class "
            f"indices 0..{num_classes - 1} or {IGNORE_LABEL} (void); give the dataset's classes "
            "with --classes or --classes_file"
        )
    return np.append(counts[:num_classes], counts[IGNORE_LABEL])


def check_items(items: list[VocItem], num_classes: int, progress: bool = False) -> np.ndarray:
    """[num_classes + 1] pixel counts (classes, then void) of the items, after checking every
    image header and every mask (size and values); UsageError at the first bad file."""
    total = np.zeros(num_classes + 1, np.int64)
    # Shown after a second only, and wiped before an error line (leave=False).
    bar = tqdm(items, desc="checking", unit="img", disable=not progress, delay=1, leave=False)
    with bar:
        for item in bar:
            total += pixel_counts(item, num_classes)
    return total


# ---------------------------------------------------------------- records


def encode_png(class_indices: np.ndarray) -> bytes:
    """Single-channel (grayscale) PNG bytes of a [H, W] uint8 class map: what readers decode
    with decode_image(channels=1) (a palette PNG would decode to its colours' luminance)."""
    buffer = io.BytesIO()
    Image.fromarray(np.asarray(class_indices, np.uint8), mode="L").save(buffer, format="PNG")
    return buffer.getvalue()


def segmentation_example(
    image_id: str, encoded_jpeg: bytes, height: int, width: int, mask_png: bytes
) -> tf.train.Example:
    """The record of one image and its class map, with build_voc2012_data.py's features."""
    import tensorflow as tf

    feature = {
        ENCODED: bytes_feature(encoded_jpeg),
        "image/format": bytes_feature(b"jpeg"),
        "image/filename": bytes_feature(image_id.encode()),
        "image/height": int_feature(height),
        "image/width": int_feature(width),
        "image/channels": int_feature(3),
        MASK_ENCODED: bytes_feature(mask_png),
        MASK_FORMAT: bytes_feature(b"png"),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature))


def _item_example(item: VocItem) -> tf.train.Example:
    """The record of a checked item: its JPEG as-is (other images re-encoded to RGB JPEG) and
    its class map re-encoded as a grayscale PNG."""
    try:
        encoded, height, width = to_rgb_jpeg(item.image.read_bytes())
    except (UnidentifiedImageError, OSError) as error:
        raise UsageError(f"cannot read image {item.image}: {error}") from None
    return segmentation_example(item.id, encoded, height, width, encode_png(class_map(item.mask)))


# ---------------------------------------------------------------- output


def _existing_output(output_dir: str) -> list[str]:
    """Shards and dataset_info.json already in output_dir (none when it does not exist);
    TensorFlow only lists remote (gs://) folders, so that checks of local data stay instant."""
    if "://" in output_dir:
        import tensorflow as tf

        names = tf.io.gfile.listdir(output_dir) if tf.io.gfile.isdir(output_dir) else []
    else:
        names = os.listdir(output_dir) if os.path.isdir(output_dir) else []
    return sorted(n for n in names if n.startswith(SPLIT_PREFIXES) or n == INFO_FILE)


def write_folder_atomically(output_dir: str, write: Callable[[str], None]) -> None:
    """Runs write(staging folder), then moves what it wrote into output_dir: a new local folder
    is renamed into place whole; into an existing (or remote) one the files move one by one,
    dataset_info.json last. On any failure nothing new is left, output_dir included."""
    import tensorflow as tf

    if "://" not in output_dir and not os.path.isdir(output_dir):
        target = Path(output_dir).absolute()
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent)
        try:
            os.chmod(staging, 0o755)  # mkdtemp makes it private.
            write(staging)
            os.rename(staging, target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return
    created = not tf.io.gfile.isdir(output_dir)
    staging = os.path.join(output_dir, f".voc-tmp-{uuid.uuid4().hex[:12]}")
    tf.io.gfile.makedirs(staging)
    moved: list[str] = []
    try:
        write(staging)
        names = sorted(tf.io.gfile.listdir(staging), key=lambda name: (name == INFO_FILE, name))
        for name in names:
            moved.append(os.path.join(output_dir, name))
            tf.io.gfile.rename(os.path.join(staging, name), moved[-1])
    except BaseException:
        for path in moved:
            if tf.io.gfile.exists(path):
                tf.io.gfile.remove(path)
        raise
    finally:
        tf.io.gfile.rmtree(staging)
        if created and tf.io.gfile.isdir(output_dir) and not tf.io.gfile.listdir(output_dir):
            tf.io.gfile.rmtree(output_dir)


def dataset_info(
    classes: Sequence[str], items: dict[str, list[VocItem]], pixels: dict[str, np.ndarray]
) -> dict[str, Any]:
    """dataset_info.json: counts, classes (background first), ignore label, pixel counts."""
    info: dict[str, Any] = {
        "num_classes": len(classes),
        "classes": list(classes),
        "ignore_label": IGNORE_LABEL,
    }
    for split, split_items in items.items():
        info[f"num_{split}_examples"] = len(split_items)
    info["class_pixels"] = {split: counts[:-1].tolist() for split, counts in pixels.items()}
    info["void_pixels"] = {split: int(counts[-1]) for split, counts in pixels.items()}
    return info


def convert(
    voc_dir: str,
    output_dir: str,
    classes: Sequence[str] | None = None,
    train_shards: int = 4,
    validation_shards: int = 4,
    progress: bool = False,
) -> dict[str, Any]:
    """Writes `train-*`/`validation-*` shards and dataset_info.json after checking every listed
    file; returns the info written. Nothing is left in output_dir when it fails."""
    if train_shards < 1 or validation_shards < 1:
        raise UsageError("--train_shards and --validation_shards must be at least 1")
    names = check_classes(VOC_CLASSES if classes is None else classes)
    items = plan(voc_dir)
    existing = _existing_output(output_dir)
    if existing:
        raise UsageError(
            f"--output_dir {output_dir} already holds {existing[0]}; use an empty directory"
        )
    pixels = {split: check_items(group, len(names), progress) for split, group in items.items()}
    info = dataset_info(names, items, pixels)
    shards = {"train": train_shards, "validation": validation_shards}

    def write(staging: str) -> None:
        for split, split_items in items.items():
            write_examples(split_items, _item_example, staging, split, shards[split], progress)
        import tensorflow as tf

        with tf.io.gfile.GFile(os.path.join(staging, INFO_FILE), "w") as f:
            json.dump(info, f, indent=2)

    write_folder_atomically(output_dir, write)
    return info


# ---------------------------------------------------------------- command line


def define_flags() -> None:
    """Defines the converter's flags (only when run as a program, so importing it is side-free)."""
    flags.DEFINE_string(
        "voc_dir", None, "VOC folder: JPEGImages/, SegmentationClass/, ImageSets/Segmentation/."
    )
    flags.DEFINE_string(
        "output_dir", None, "Where the TFRecord shards are written (local or gs://)."
    )
    flags.DEFINE_integer("train_shards", 4, "Number of train-*-of-* TFRecord files.")
    flags.DEFINE_integer("validation_shards", 4, "Number of validation-*-of-* TFRecord files.")
    flags.DEFINE_list("classes", None, "Class names, background first (default: VOC's 21 classes).")
    flags.DEFINE_string("classes_file", None, "File of class names, one a line, background first.")


def main(argv: list[str]) -> None:
    """Converts with the parsed flags and prints what was written."""
    f = flags.FLAGS
    require_flags(argv, "voc_dir", "output_dir")
    if f.classes and f.classes_file:
        raise UsageError("give --classes or --classes_file, not both")
    classes = read_classes(f.classes_file) if f.classes_file else f.classes
    info = convert(
        f.voc_dir, f.output_dir, classes, f.train_shards, f.validation_shards, progress=True
    )
    print(
        f"wrote {info['num_train_examples']} train and {info['num_validation_examples']} "
        f"validation examples of {info['num_classes']} classes to {f.output_dir}"
    )


if __name__ == "__main__":
    define_flags()
    run_app(main)
