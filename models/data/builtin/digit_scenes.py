"""Real handwritten digits pasted onto real photographs: a small COCO-layout detection dataset.

scikit-learn's 8x8 digits of five easily told apart classes (0, 2, 4, 5, 7 as category ids
1..5) are upsampled bicubically to 16-40 px, coloured to contrast with the background and
pasted with their masks (intensity >= 0.5, holes filled as COCO polygons fill them) onto
random crops of scikit-learn's two sample photographs. Scenes are 128x128 with 1-4 objects; a
later object occludes earlier ones, whose masks and boxes keep only their visible part, and a
placement that would leave an earlier object under 40% visible (or with a hole) is retried.
Train and val use disjoint digit images. Layout, as COCO's: images/{train,val}/<id>.jpg and
annotations/instances_{train,val}.json, plus TFRecords from models.data.convert.coco.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from models.data.builtin.cache import build_once
from models.data.imagenet_schema import JPEG_QUALITY

NAME = "digit-scenes-v1"
SCENE_SIZE = 128
DIGITS = (0, 2, 4, 5, 7)  # The 5 digits least confused at low resolution; ids 1..5.
CATEGORIES = [
    {"id": index + 1, "name": str(digit), "supercategory": "digit"}
    for index, digit in enumerate(DIGITS)
]
TRAIN_SCENES = 1500
VAL_SCENES = 300
SEED = 0
VAL_DIGIT_FRACTION = 0.2
MIN_SIDE, MAX_SIDE = 16, 40  # Side of the upsampled 8x8 digit cell, log-uniform.
MAX_ASPECT_JITTER = 0.2  # Width = side * exp(U(-j, j)).
MAX_OBJECTS = 4
MIN_VISIBLE = 0.4  # An earlier object must keep this fraction of its pixels visible.
PLACEMENT_TRIES = 20
MASK_THRESHOLD = 0.5  # Of the digit intensity, 0..1.
MIN_CONTRAST = 0.35  # Luminance difference (0..1) of a digit's colour from its background.
POLYGON_SCALE = 4  # Contours traced at 4x so that the polygons rasterise back to the mask.
SPLITS = {"train": "train", "val": "validation"}  # COCO split -> pipeline split name.
SHARDS = {"train": 4, "val": 2}
LUMA = np.array([0.299, 0.587, 0.114])


@dataclass(frozen=True)
class Digit:
    """One 8x8 handwritten digit: its index in load_digits, intensity 0..1, category id."""

    index: int
    image: np.ndarray
    category_id: int


def prepare(root: Path | None = None) -> str:
    """Digit-scenes directory under root (default: the cache), written once and atomically."""
    return build_once(NAME, lambda staging: write(staging, TRAIN_SCENES, VAL_SCENES, SEED), root)


def write(
    directory: Path,
    train_scenes: int = TRAIN_SCENES,
    val_scenes: int = VAL_SCENES,
    seed: int = SEED,
) -> None:
    """Writes the COCO images and annotations, then their TFRecords, into directory."""
    write_coco(directory, train_scenes, val_scenes, seed)
    write_records(directory)


def write_coco(directory: Path, train_scenes: int, val_scenes: int, seed: int) -> None:
    """Writes images/{train,val}/<id>.jpg and annotations/instances_{train,val}.json."""
    digits = split_digits(seed)
    photos = photographs()
    counts = {"train": train_scenes, "val": val_scenes}
    for index, split in enumerate(SPLITS):
        coco = _write_split(
            Path(directory), split, counts[split], digits[split], photos, seed, index
        )
        path = Path(directory) / "annotations" / f"instances_{split}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(coco))


def write_records(directory: Path) -> None:
    """Converts both COCO splits into `train-*` and `validation-*` TFRecords in directory."""
    from models.data.convert.coco import convert

    for split, name in SPLITS.items():
        convert(
            str(Path(directory) / "images" / split),
            str(Path(directory) / "annotations" / f"instances_{split}.json"),
            str(directory),
            split=name,
            num_shards=SHARDS[split],
            include_masks=True,
        )


def split_digits(seed: int) -> dict[str, list[Digit]]:
    """The DIGITS classes of scikit-learn's digits, split stratified into disjoint train/val."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    data = load_digits()
    keep = np.flatnonzero(np.isin(data.target, DIGITS))
    train, val = train_test_split(
        keep, test_size=VAL_DIGIT_FRACTION, stratify=data.target[keep], random_state=seed
    )
    category = {digit: index + 1 for index, digit in enumerate(DIGITS)}

    def digits(indices: np.ndarray) -> list[Digit]:
        return [
            Digit(int(i), data.images[i] / 16.0, category[int(data.target[i])])
            for i in sorted(indices)
        ]

    return {"train": digits(train), "val": digits(val)}


def photographs() -> list[np.ndarray]:
    """scikit-learn's sample photographs (china.jpg, flower.jpg) as float RGB in 0..1."""
    from sklearn.datasets import load_sample_images

    return [image.astype(np.float64) / 255.0 for image in load_sample_images().images]


def _write_split(
    directory: Path,
    split: str,
    count: int,
    digits: list[Digit],
    photos: list[np.ndarray],
    seed: int,
    split_index: int,
) -> dict[str, Any]:
    """Composes and saves count scenes; returns the split's COCO dictionary."""
    image_dir = directory / "images" / split
    image_dir.mkdir(parents=True, exist_ok=True)
    images, annotations = [], []
    for scene_index, (scene, objects) in enumerate(
        scenes(count, digits, photos, seed, split_index)
    ):
        image_id = scene_index + 1
        file_name = f"{image_id:012d}.jpg"
        Image.fromarray(scene).save(image_dir / file_name, quality=JPEG_QUALITY)
        images.append(
            {"id": image_id, "file_name": file_name, "height": SCENE_SIZE, "width": SCENE_SIZE}
        )
        for category_id, mask in objects:
            annotations.append(annotation(len(annotations) + 1, image_id, category_id, mask))
    info = {"description": f"{NAME} {split}: sklearn digits on sklearn sample photographs"}
    return {
        "info": info,
        "licenses": [],
        "images": images,
        "annotations": annotations,
        "categories": CATEGORIES,
    }


def scenes(
    count: int, digits: list[Digit], photos: list[np.ndarray], seed: int, split_index: int
) -> Iterator[tuple[np.ndarray, list[tuple[int, np.ndarray]]]]:
    """The split's count scenes in order, each composed from its own generator (seeded by seed,
    split and scene index): what both the COCO and the VOC layouts of the scenes are made of."""
    for scene_index in range(count):
        yield compose(np.random.default_rng([seed, split_index, scene_index]), digits, photos)


def compose(
    rng: np.random.Generator, digits: list[Digit], photos: list[np.ndarray]
) -> tuple[np.ndarray, list[tuple[int, np.ndarray]]]:
    """(uint8 scene, [(category id, visible bool mask)]) with 1..MAX_OBJECTS pasted digits."""
    photo = background(rng, photos)
    canvas = photo.copy()
    owner = np.zeros((SCENE_SIZE, SCENE_SIZE), np.int32)  # 0: background, k: object k.
    placed: list[tuple[int, int]] = []  # (category id, full pixel count)
    for _ in range(rng.integers(1, MAX_OBJECTS + 1)):
        digit = digits[rng.integers(len(digits))]
        alpha = digit_alpha(rng, digit.image)
        mask = solid(alpha >= MASK_THRESHOLD)
        alpha, mask = _crop(alpha, mask)
        position = _place(rng, mask, owner, [area for _, area in placed])
        if position is None:
            continue
        region = _region(position, mask.shape)
        owner[region][mask] = len(placed) + 1
        colour = contrasting_colour(rng, photo[region][mask].mean(axis=0))
        weight = np.clip(2.0 * alpha - 0.5, 0.0, 1.0)[..., None]
        painted = photo[region] * (1.0 - weight) + colour * weight
        canvas[region] = np.where(mask[..., None], painted, canvas[region])
        placed.append((digit.category_id, int(mask.sum())))
    scene = np.rint(canvas * 255.0).astype(np.uint8)
    return scene, [(category, owner == k + 1) for k, (category, _) in enumerate(placed)]


def background(rng: np.random.Generator, photos: list[np.ndarray]) -> np.ndarray:
    """A random square crop of a random photograph, resized to the scene and maybe mirrored."""
    photo = photos[rng.integers(len(photos))]
    height, width = photo.shape[:2]
    side = int(np.exp(rng.uniform(np.log(SCENE_SIZE), np.log(min(height, width)))))
    top, left = rng.integers(height - side + 1), rng.integers(width - side + 1)
    crop = np.rint(photo[top : top + side, left : left + side] * 255.0).astype(np.uint8)
    resized = Image.fromarray(crop).resize((SCENE_SIZE, SCENE_SIZE), Image.LANCZOS)
    pixels = np.asarray(resized, np.float64) / 255.0
    return pixels[:, ::-1].copy() if rng.random() < 0.5 else pixels


def digit_alpha(rng: np.random.Generator, image: np.ndarray) -> np.ndarray:
    """The 8x8 intensity upsampled bicubically to a random size, clipped to 0..1."""
    side = np.exp(rng.uniform(np.log(MIN_SIDE), np.log(MAX_SIDE)))
    width = side * np.exp(rng.uniform(-MAX_ASPECT_JITTER, MAX_ASPECT_JITTER))
    size = (int(round(width)), int(round(side)))
    resized = Image.fromarray(image.astype(np.float32), mode="F").resize(size, Image.BICUBIC)
    return np.clip(np.asarray(resized, np.float64), 0.0, 1.0)


def solid(mask: np.ndarray) -> np.ndarray:
    """The mask with its holes filled (the region inside its outer contours)."""
    import cv2

    contours, _ = cv2.findContours(mask.astype(np.uint8), cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
    filled = np.zeros(mask.shape, np.uint8)
    cv2.drawContours(filled, contours, -1, 1, thickness=-1)
    return filled.astype(bool)


def _crop(alpha: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """alpha and mask cut to the mask's bounding box."""
    rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
    box = slice(rows[0], rows[-1] + 1), slice(cols[0], cols[-1] + 1)
    return alpha[box], mask[box]


def _region(position: tuple[int, int], shape: tuple[int, ...]) -> tuple[slice, slice]:
    """Scene slices of an object of shape placed with its top-left corner at position."""
    top, left = position
    return slice(top, top + shape[0]), slice(left, left + shape[1])


def _place(
    rng: np.random.Generator, mask: np.ndarray, owner: np.ndarray, areas: list[int]
) -> tuple[int, int] | None:
    """A random top-left corner at which mask leaves every earlier object visible enough."""
    for _ in range(PLACEMENT_TRIES):
        position = (
            int(rng.integers(SCENE_SIZE - mask.shape[0] + 1)),
            int(rng.integers(SCENE_SIZE - mask.shape[1] + 1)),
        )
        trial = owner.copy()
        trial[_region(position, mask.shape)][mask] = len(areas) + 1
        if all(_visible_enough(trial == k + 1, area) for k, area in enumerate(areas)):
            return position
    return None


def _visible_enough(visible: np.ndarray, area: int) -> bool:
    """Whether an occluded object keeps MIN_VISIBLE of its area and no hole in its mask."""
    count = int(visible.sum())
    return count >= MIN_VISIBLE * area and (
        count == area or np.array_equal(solid(visible), visible)
    )


def contrasting_colour(rng: np.random.Generator, under: np.ndarray) -> np.ndarray:
    """A random RGB colour (0..1) whose luminance differs from under's by MIN_CONTRAST."""
    luma = float(under @ LUMA)
    for _ in range(50):
        colour = rng.random(3)
        if abs(float(colour @ LUMA) - luma) >= MIN_CONTRAST:
            return colour
    return np.zeros(3) if luma > 0.5 else np.ones(3)


def annotation(annotation_id: int, image_id: int, category_id: int, mask: np.ndarray) -> dict:
    """A COCO instance annotation of a visible mask: tight box, pixel area, polygons."""
    rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
    x, y = int(cols[0]), int(rows[0])
    return {
        "id": annotation_id,
        "image_id": image_id,
        "category_id": category_id,
        "bbox": [x, y, int(cols[-1]) + 1 - x, int(rows[-1]) + 1 - y],
        "area": int(mask.sum()),
        "iscrowd": 0,
        "segmentation": segmentation(mask),
    }


def segmentation(mask: np.ndarray) -> list[list[float]] | dict[str, Any]:
    """COCO polygons of the mask's outer contours; RLE where polygons would not reproduce it."""
    from pycocotools import mask as coco_mask

    polygons = polygons_of(mask)
    height, width = mask.shape
    if polygons and all(len(polygon) >= 6 for polygon in polygons):
        decoded = coco_mask.decode(coco_mask.frPyObjects(polygons, height, width)).max(axis=2)
        if np.array_equal(decoded.astype(bool), mask):
            return polygons
    rle = coco_mask.encode(np.asfortranarray(mask.astype(np.uint8)))
    return {"size": [height, width], "counts": rle["counts"].decode("ascii")}


def polygons_of(mask: np.ndarray) -> list[list[float]]:
    """Flat [x0, y0, x1, y1, ...] outer contours, traced around pixel edges (inset 1/8 px)."""
    import cv2

    scale = POLYGON_SCALE
    upsampled = np.kron(mask.astype(np.uint8), np.ones((scale, scale), np.uint8))
    contours, _ = cv2.findContours(upsampled, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    return [(contour.reshape(-1, 2) / scale + 0.5 / scale).ravel().tolist() for contour in contours]
