"""The digit scenes as a Pascal VOC semantic-segmentation dataset: per-pixel class maps.

The same scenes as models.data.builtin.digit_scenes (scikit-learn's handwritten digits pasted
onto crops of its sample photographs, same seed: the same images), labelled as VOC labels
them: class 0 background, 1..5 the digits 0, 2, 4, 5, 7, and a 1 px void (255) ring around each
object's visible outline, on the side of the background or of the object it occludes (a band
over the boundary itself would wipe out the thinnest strokes of the smallest digits). Layout,
as VOC2012's: JPEGImages/<id>.jpg, SegmentationClass/<id>.png (palette PNGs in VOC's colours),
ImageSets/Segmentation/{train,val}.txt, plus TFRecords from models.data.convert.voc.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from models.data.builtin import digit_scenes
from models.data.builtin.cache import build_once
from models.data.imagenet_schema import JPEG_QUALITY

NAME = "digit-scenes-voc-v1"
CLASSES = ("background", *(category["name"] for category in digit_scenes.CATEGORIES))
VOID = 255
TRAIN_SCENES = digit_scenes.TRAIN_SCENES
VAL_SCENES = digit_scenes.VAL_SCENES
SEED = digit_scenes.SEED
SHARDS = {"train": 4, "validation": 2}
VOC_LISTS = ("train", "val")  # In digit_scenes' split order, so the scenes are the same.


def prepare(root: Path | None = None) -> str:
    """The dataset's directory under root (default: the cache), written once and atomically."""
    return build_once(NAME, lambda staging: write(staging, TRAIN_SCENES, VAL_SCENES, SEED), root)


def write(
    directory: Path,
    train_scenes: int = TRAIN_SCENES,
    val_scenes: int = VAL_SCENES,
    seed: int = SEED,
) -> None:
    """Writes the VOC layout, then its TFRecords and dataset_info.json, into directory."""
    from models.data.convert.voc import convert

    write_voc(directory, train_scenes, val_scenes, seed)
    convert(
        str(directory),
        str(directory),
        CLASSES,
        train_shards=SHARDS["train"],
        validation_shards=SHARDS["validation"],
    )


def write_voc(directory: Path, train_scenes: int, val_scenes: int, seed: int) -> None:
    """Writes JPEGImages/, SegmentationClass/ and ImageSets/Segmentation/{train,val}.txt."""
    from models.data.convert.voc import IMAGE_DIR, LIST_DIR, MASK_DIR, colourize

    root = Path(directory)
    for folder in (IMAGE_DIR, MASK_DIR, LIST_DIR):
        (root / folder).mkdir(parents=True, exist_ok=True)
    digits = digit_scenes.split_digits(seed)
    photos = digit_scenes.photographs()
    counts = {"train": train_scenes, "val": val_scenes}
    for split_index, split in enumerate(VOC_LISTS):
        ids = []
        scenes = digit_scenes.scenes(counts[split], digits[split], photos, seed, split_index)
        for index, (scene, objects) in enumerate(scenes):
            ids.append(f"{split}_{index + 1:06d}")
            Image.fromarray(scene).save(root / IMAGE_DIR / f"{ids[-1]}.jpg", quality=JPEG_QUALITY)
            colourize(class_map(objects)).save(root / MASK_DIR / f"{ids[-1]}.png")
        (root / LIST_DIR / f"{split}.txt").write_text("".join(f"{i}\n" for i in ids))


def class_map(objects: list[tuple[int, np.ndarray]]) -> np.ndarray:
    """[H, W] uint8 classes of a scene's (category id, visible mask) objects: the category
    under each object, 0 elsewhere, VOID on the 1 px ring just outside each object."""
    shape = objects[0][1].shape if objects else (digit_scenes.SCENE_SIZE,) * 2
    owner = np.zeros(shape, np.int32)  # 0 background, k + 1 the k-th object pasted.
    for index, (_, mask) in enumerate(objects):
        owner[mask] = index + 1
    categories = np.array([0, *(category for category, _ in objects)], np.uint8)
    classes = categories[owner]
    # A pixel next to one of a later object (the background is first of all) is void.
    classes[owner < _neighbourhood_max(owner)] = VOID
    return classes


def _neighbourhood_max(values: np.ndarray) -> np.ndarray:
    """The maximum over each pixel's 3x3 neighbourhood (edges repeated)."""
    padded = np.pad(values, 1, mode="edge")
    height, width = values.shape
    shifts = [padded[dy : dy + height, dx : dx + width] for dy in range(3) for dx in range(3)]
    return np.max(shifts, axis=0)
