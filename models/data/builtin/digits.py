"""Real scikit-learn handwritten digits as ImageNet-schema JPEG TFRecords: the offline default.

1797 8x8 digits upsampled to 32x32 RGB, labels digit + 1 (ImageNet's 1-based convention).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from models.data.builtin.cache import build_once
from models.data.imagenet_schema import (
    LABEL_OFFSET,
    encode_jpeg,
    image_example,
    write_dataset_info,
)
from models.data.shards import write_examples

NAME = "digits-v1"
IMAGE_SIZE = 32
CLASSES = [str(digit) for digit in range(10)]
VALIDATION_FRACTION = 0.2
SPLIT_SEED = 0
TRAIN_SHARDS = 4
VALIDATION_SHARDS = 2


def prepare(root: Path | None = None) -> str:
    """Digits directory under root (default: the cache), written once and atomically."""
    return build_once(NAME, write, root)


def images_and_labels() -> tuple[np.ndarray, np.ndarray]:
    """(uint8 [1797, 32, 32, 3] RGB images, digit labels 0..9) from scikit-learn's copy."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    pixels = np.rint(digits.images * (255.0 / 16.0)).astype(np.uint8)
    images = np.stack([_upsample(image) for image in pixels])
    return images, digits.target.astype(np.int64)


def _upsample(image: np.ndarray) -> np.ndarray:
    """8x8 grayscale -> IMAGE_SIZE x IMAGE_SIZE RGB (PIL bilinear)."""
    resized = Image.fromarray(image).resize((IMAGE_SIZE, IMAGE_SIZE), Image.BILINEAR)
    return np.asarray(resized.convert("RGB"))


def write(directory: Path) -> None:
    """Writes the stratified train/validation shards and dataset_info.json into directory."""
    from sklearn.model_selection import train_test_split

    images, digits = images_and_labels()
    train, validation = train_test_split(
        np.arange(len(digits)),
        test_size=VALIDATION_FRACTION,
        stratify=digits,
        random_state=SPLIT_SEED,
    )

    def to_example(index: int):
        digit = int(digits[index])
        encoded = encode_jpeg(Image.fromarray(images[index]))
        name = f"digit-{index:04d}.jpeg"
        return image_example(
            encoded, digit + LABEL_OFFSET, CLASSES[digit], name, *images.shape[1:3]
        )

    write_examples(list(train), to_example, directory, "train", TRAIN_SHARDS)
    write_examples(list(validation), to_example, directory, "validation", VALIDATION_SHARDS)
    write_dataset_info(directory, CLASSES, len(train), len(validation))
