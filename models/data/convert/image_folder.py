"""Converts an image folder (a subfolder per class, or raw ImageNet) to ImageNet-schema TFRecords.

Usage: python -m models.data.convert.image_folder --input_dir=ROOT --output_dir=OUT [--help]
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from absl import app, flags
from PIL import UnidentifiedImageError

from models.core.errors import UsageError, fail, nearest, require_flags, run_guarded
from models.data.imagenet_schema import (
    LABEL_OFFSET,
    SPLIT_PREFIXES,
    image_example,
    to_rgb_jpeg,
    write_dataset_info,
)
from models.data.shards import write_examples

if TYPE_CHECKING:
    import tensorflow as tf

IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png"})
DEFAULT_VALIDATION_FRACTION = 0.1  # Held out of each class when there is no --validation_dir.


@dataclass(frozen=True)
class ImageItem:
    """One source image and the class it belongs to."""

    path: Path
    label: int
    synset: str


# ---------------------------------------------------------------- reading the image folders


def _require_dir(path: str | Path, flag: str) -> Path:
    """The path as a Path, or UsageError naming the flag when it is not a directory."""
    if not Path(path).is_dir():
        raise UsageError(f"--{flag} {path} is not a directory")
    return Path(path)


def _is_image_name(path: Path) -> bool:
    """Whether the name ends in .jpg/.jpeg/.png (any case)."""
    return path.suffix.lower() in IMAGE_SUFFIXES


def _entries(folder: Path, wanted: Callable[[Path], bool]) -> list[Path]:
    """Sorted visible entries of folder that `wanted` accepts; UsageError when one of them is a
    broken symlink or a symlink loop (it would silently be left out)."""
    try:
        entries = sorted(p for p in folder.iterdir() if not p.name.startswith(".") and wanted(p))
    except OSError as error:
        raise UsageError(f"cannot list {folder}: {error.strerror or error}") from None
    dangling = [p.name for p in entries if p.is_symlink() and not p.exists()]
    if dangling:
        more = ", ..." if len(dangling) > 3 else ""
        raise UsageError(
            f"{folder} has broken symlinks or symlink loops: {', '.join(dangling[:3])}{more}"
        )
    return entries


def _class_dirs(root: Path) -> list[str]:
    """Sorted names of the visible subdirectories of root."""
    return [p.name for p in _entries(root, lambda p: True) if p.is_dir()]


def _images(folder: Path) -> list[Path]:
    """Sorted image files (.jpg/.jpeg/.png, any case, not hidden) directly inside folder."""
    return [p for p in _entries(folder, _is_image_name) if p.is_file()]


def _folder_items(root: Path, labels: dict[str, int], flag: str) -> list[ImageItem]:
    """Items of a ROOT/<class>/<image> tree whose classes must all be known labels; every
    --input_dir class folder must hold images (an empty one would still become a class)."""
    items = []
    for name in _class_dirs(root):
        if name not in labels:
            raise UsageError(
                f"--{flag} {root} has class folder '{name}' that is not a class of "
                f"--input_dir{nearest(name, labels)}"
            )
        images = _images(root / name)
        if not images and flag == "input_dir":
            raise UsageError(
                f"--input_dir {root} class folder '{name}' has no .jpg/.jpeg/.png images; "
                "add images or remove the folder"
            )
        items += [ImageItem(path, labels[name], name) for path in images]
    if not items:
        raise UsageError(f"--{flag} {root} has no .jpg/.jpeg/.png images in class subfolders")
    return items


def _labelled_items(folder: Path, labels_file: str, labels: dict[str, int]) -> list[ImageItem]:
    """Items of a flat folder labelled by a file of class names, one per sorted image."""
    if not Path(labels_file).is_file():
        raise UsageError(f"--validation_labels {labels_file} is not a file")
    names = [line.strip() for line in Path(labels_file).read_text().splitlines() if line.strip()]
    images = _images(folder)
    if not images:
        raise UsageError(f"--validation_dir {folder} has no .jpg/.jpeg/.png images")
    if len(names) != len(images):
        raise UsageError(
            f"--validation_labels {labels_file} has {len(names)} labels but "
            f"--validation_dir {folder} has {len(images)} images"
        )
    for line, name in enumerate(names, start=1):
        if name not in labels:
            raise UsageError(
                f"--validation_labels {labels_file} line {line}: '{name}' is not a class of "
                f"--input_dir{nearest(name, labels)}"
            )
    return [ImageItem(path, labels[name], name) for path, name in zip(images, names, strict=True)]


def _fraction_split(
    items: list[ImageItem], fraction: float, seed: int
) -> tuple[list[ImageItem], list[ImageItem]]:
    """Stratified split: round(fraction * n) images of each class go to validation, at least
    one and never all of them (a class of one image stays in train)."""
    rng = random.Random(seed)
    train, validation = [], []
    for label in sorted({item.label for item in items}):
        group = [item for item in items if item.label == label]
        rng.shuffle(group)
        count = min(max(1, round(fraction * len(group))), len(group) - 1)
        validation += sorted(group[:count], key=lambda item: item.path)
        train += group[count:]
    return train, validation


def plan(
    input_dir: str,
    validation_dir: str | None = None,
    validation_labels: str | None = None,
    validation_fraction: float | None = None,
    seed: int = 0,
) -> tuple[list[str], list[ImageItem], list[ImageItem]]:
    """(classes, train items in shuffled order, validation items) for the given layout.

    Without validation_dir, validation_fraction (default DEFAULT_VALIDATION_FRACTION) of each
    class is held out; 0 writes no validation split."""
    _check_validation_flags(validation_dir, validation_labels, validation_fraction)
    if validation_fraction is None:
        validation_fraction = 0.0 if validation_dir else DEFAULT_VALIDATION_FRACTION
    root = _require_dir(input_dir, "input_dir")
    classes = _class_dirs(root)
    if not classes:
        raise UsageError(f"--input_dir {root} has no class subfolders")
    labels = {name: index + LABEL_OFFSET for index, name in enumerate(classes)}
    train = _folder_items(root, labels, "input_dir")
    validation: list[ImageItem] = []
    if validation_dir and validation_labels:
        folder = _require_dir(validation_dir, "validation_dir")
        validation = _labelled_items(folder, validation_labels, labels)
    elif validation_dir:
        folder = _require_dir(validation_dir, "validation_dir")
        if not _class_dirs(folder):
            raise UsageError(
                f"--validation_dir {folder} has no class subfolders; "
                "pass --validation_labels for a flat folder of images"
            )
        validation = _folder_items(folder, labels, "validation_dir")
    elif validation_fraction > 0:
        train, validation = _fraction_split(train, validation_fraction, seed)
        if not validation:
            raise UsageError(
                f"--input_dir {root} has no class with 2 or more images to hold out for "
                "validation; add images, pass --validation_dir, or --validation_fraction=0"
            )
    random.Random(seed).shuffle(train)
    return classes, train, validation


def _check_validation_flags(
    validation_dir: str | None, validation_labels: str | None, validation_fraction: float | None
) -> None:
    """UsageError for contradictory validation options."""
    fraction = validation_fraction or 0.0
    if not 0.0 <= fraction < 1.0:
        raise UsageError(f"--validation_fraction must be in [0, 1), got {validation_fraction}")
    if validation_labels and not validation_dir:
        raise UsageError("--validation_labels needs --validation_dir (the folder it labels)")
    if validation_dir and fraction > 0:
        raise UsageError("pass either --validation_dir or --validation_fraction, not both")


def _check_output_dir(output_dir: str, *inputs: tuple[str, str | None]) -> None:
    """UsageError when output_dir lies inside an input folder: a later run would read its
    shards' folder as a class (local paths only; gs:// and other URLs cannot overlap them)."""
    if "://" in output_dir:
        return
    output = Path(os.path.realpath(output_dir))
    for flag, folder in inputs:
        if folder and Path(folder).is_dir() and output.is_relative_to(os.path.realpath(folder)):
            raise UsageError(
                f"--output_dir {output_dir} is inside --{flag} {folder}; write the "
                "TFRecords outside the images"
            )


# ---------------------------------------------------------------- conversion


def _item_example(item: ImageItem) -> tf.train.Example:
    """The record of one source image, re-encoded to RGB JPEG when it is not one already."""
    try:
        encoded, height, width = to_rgb_jpeg(item.path.read_bytes())
    except UnidentifiedImageError:
        raise UsageError(f"cannot read image {item.path}: not a JPEG or PNG file") from None
    except OSError as error:
        raise UsageError(f"cannot read image {item.path}: {error}") from None
    return image_example(encoded, item.label, item.synset, item.path.name, height, width)


def _shard_names(output_dir: str) -> list[str]:
    """Names of the train/validation shards in output_dir."""
    import tensorflow as tf

    return [n for n in tf.io.gfile.listdir(output_dir) if n.startswith(SPLIT_PREFIXES)]


def _prepare_output(output_dir: str) -> None:
    """Creates output_dir; UsageError if it already holds shards (stale ones would be read)."""
    import tensorflow as tf

    tf.io.gfile.makedirs(output_dir)
    existing = _shard_names(output_dir)
    if existing:
        raise UsageError(
            f"--output_dir {output_dir} already holds shards ({existing[0]}, ...); "
            "use an empty directory"
        )


def convert(
    input_dir: str,
    output_dir: str,
    validation_dir: str | None = None,
    validation_labels: str | None = None,
    validation_fraction: float | None = None,
    train_shards: int = 8,
    validation_shards: int = 2,
    seed: int = 0,
    progress: bool = True,
) -> dict[str, Any]:
    """Writes train/validation shards and dataset_info.json; returns the info written."""
    if train_shards < 1 or validation_shards < 1:
        raise UsageError("--train_shards and --validation_shards must be at least 1")
    _check_output_dir(output_dir, ("input_dir", input_dir), ("validation_dir", validation_dir))
    classes, train, validation = plan(
        input_dir, validation_dir, validation_labels, validation_fraction, seed
    )
    import tensorflow as tf

    _prepare_output(output_dir)
    try:
        write_examples(train, _item_example, output_dir, "train", train_shards, progress)
        write_examples(
            validation, _item_example, output_dir, "validation", validation_shards, progress
        )
    except BaseException:  # a bad image or an interrupt: no partial dataset is left behind
        for name in _shard_names(output_dir):  # held none before (_prepare_output)
            tf.io.gfile.remove(os.path.join(output_dir, name))
        raise
    return write_dataset_info(output_dir, classes, len(train), len(validation))


# ---------------------------------------------------------------- command line


def define_flags() -> None:
    """Defines the converter's flags (only when run as a program, so importing it is side-free)."""
    flags.DEFINE_string("input_dir", None, "Training images: ROOT/<class>/*.{jpg,jpeg,png}.")
    flags.DEFINE_string(
        "output_dir", None, "Where the TFRecord shards are written (local or gs://)."
    )
    flags.DEFINE_string(
        "validation_dir",
        None,
        "Validation images: a flat folder (needs --validation_labels, as raw ImageNet val) "
        "or a folder laid out like --input_dir.",
    )
    flags.DEFINE_string(
        "validation_labels",
        None,
        "Class name of each --validation_dir image, one per line, in sorted file-name order "
        "(imagenet_to_gcs synset_labels.txt).",
    )
    flags.DEFINE_float(
        "validation_fraction",
        None,
        "Share of each class's images held out as the validation split (stratified; at least "
        f"one of each class of 2 or more images). Default {DEFAULT_VALIDATION_FRACTION} "
        "without --validation_dir; 0 writes no validation split.",
    )
    flags.DEFINE_integer("train_shards", 8, "Number of train-*-of-* TFRecord files.")
    flags.DEFINE_integer("validation_shards", 2, "Number of validation-*-of-* TFRecord files.")
    flags.DEFINE_integer(
        "seed", 0, "Seed of the train shuffle and the --validation_fraction split."
    )


def _parse_flags(argv: list[str]) -> list[str]:
    """Parses flags, turning a flag error into one `error:` line with exit code 2."""
    try:
        return flags.FLAGS(argv)
    except flags.Error as error:
        fail(str(error))


def _run(argv: list[str]) -> None:
    """Converts with the parsed flags."""
    f = flags.FLAGS
    require_flags(argv, "input_dir", "output_dir")
    info = convert(
        f.input_dir,
        f.output_dir,
        f.validation_dir,
        f.validation_labels,
        f.validation_fraction,
        f.train_shards,
        f.validation_shards,
        f.seed,
    )
    print(
        f"wrote {info['num_train_examples']} train and {info['num_eval_examples']} validation "
        f"examples of {info['num_classes']} classes to {f.output_dir}"
    )


def main(argv: list[str]) -> None:
    """absl entry point: usage errors become one line on stderr and exit code 2."""
    run_guarded(lambda: _run(argv))


if __name__ == "__main__":
    define_flags()
    app.run(main, flags_parser=_parse_flags)
