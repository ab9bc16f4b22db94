"""Predictions drawn onto images for people to look at (`--mode=predict`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from PIL import Image, ImageDraw, ImageFont

# Distinct, saturated colours, cycled over a drawing's boxes.
PALETTE = (
    (230, 25, 75),
    (60, 180, 75),
    (255, 225, 25),
    (0, 130, 200),
    (245, 130, 48),
    (145, 30, 180),
    (70, 240, 240),
    (240, 50, 230),
    (210, 245, 60),
    (250, 190, 212),
)


MIN_SIDE = 512  # smaller images are enlarged (whole multiples) so that labels stay legible


def _enlarged(image: np.ndarray) -> tuple[Image.Image, int]:
    """The image as PIL's, enlarged by a whole factor when under MIN_SIDE; the factor."""
    zoom = max(1, MIN_SIDE // max(image.shape[:2]))
    picture = Image.fromarray(image)
    return picture.resize((picture.width * zoom, picture.height * zoom), Image.NEAREST), zoom


def _font(picture: Image.Image) -> ImageFont.ImageFont:
    return ImageFont.load_default(size=max(12, max(picture.size) // 32))


def _label(pen: ImageDraw.ImageDraw, x: float, y: float, text: str, colour, font) -> float:
    """`text` written with its bottom-left at (x, y), on a filled strip in `colour` so that it
    stays readable on any background; the strip's top."""
    left, top, right, bottom = pen.textbbox((x, y), text, font=font)
    lift = bottom - top + 2
    strip = [left, max(top - lift, 0), right + 2, max(bottom - lift, 0) + 2]
    pen.rectangle(strip, fill=colour)
    pen.text((strip[0] + 1, strip[1]), text, fill=(0, 0, 0), font=font)
    return strip[1]


def draw_boxes(
    image: np.ndarray, boxes: np.ndarray, labels: Sequence[str], faded: bool = False
) -> np.ndarray:
    """`image` (uint8 [H, W, 3]) with each box ([ymin, xmin, ymax, xmax] pixels) outlined and
    its label written above it; `faded`: in pale colours and thin lines (boxes shown although
    they score below the threshold). An image under MIN_SIDE pixels is drawn enlarged by a
    whole factor."""
    picture, zoom = _enlarged(image)
    pen, font = ImageDraw.Draw(picture), _font(picture)
    width = 1 if faded else max(1, round(max(picture.size) / 256))
    for index, (box, label) in enumerate(zip(np.asarray(boxes) * zoom, labels, strict=True)):
        ymin, xmin, ymax, xmax = box
        colour = PALETTE[index % len(PALETTE)]
        if faded:
            colour = tuple((channel + 2 * 255) // 3 for channel in colour)
        pen.rectangle([xmin, ymin, xmax, ymax], outline=colour, width=width)
        _label(pen, xmin, ymin, label, colour, font)
    return np.asarray(picture)


def draw_captions(image: np.ndarray, captions: Sequence[str]) -> np.ndarray:
    """`image` (uint8 [H, W, 3]) with `captions` written one under another from its top-left
    corner (a classifier's top classes), enlarged as draw_boxes does."""
    picture, _ = _enlarged(image)
    pen, font = ImageDraw.Draw(picture), _font(picture)
    for index, caption in enumerate(captions):
        height = pen.textbbox((0, 0), "Ag", font=font)[3] + 4
        _label(pen, 0, (index + 1) * height, caption, PALETTE[index % len(PALETTE)], font)
    return np.asarray(picture)


def draw_masks(image: np.ndarray, masks: np.ndarray, opacity: float = 0.45) -> np.ndarray:
    """`image` (uint8 [H, W, 3]) with each binary mask ([N, H, W], on the image) tinted in the
    colour `draw_boxes` gives the box of the same index, so that mask and box match."""
    tinted = image.astype(np.float32)
    for index, mask in enumerate(np.asarray(masks, bool)):
        colour = np.array(PALETTE[index % len(PALETTE)], np.float32)
        tinted[mask] = (1 - opacity) * tinted[mask] + opacity * colour
    return np.round(tinted).astype(np.uint8)


def image_grid(images: np.ndarray, columns: int, gap: int = 2) -> np.ndarray:
    """uint8 [N, H, W, C] images tiled row by row, `columns` a row, on a white background."""
    images = np.asarray(images)
    count, height, width, channels = images.shape
    rows = -(-count // columns)
    grid = np.full(
        (rows * (height + gap) + gap, columns * (width + gap) + gap, channels), 255, np.uint8
    )
    for i, image in enumerate(images):
        top, left = gap + (i // columns) * (height + gap), gap + (i % columns) * (width + gap)
        grid[top : top + height, left : left + width] = image
    return grid


def draw_class_map(
    image: np.ndarray, classes: np.ndarray, colours: np.ndarray, opacity: float = 0.5
) -> np.ndarray:
    """`image` (uint8 [H, W, 3]) with each pixel of a non-zero class (`classes` [H, W]) tinted
    in `colours[class]` ([256, 3], e.g. VOC's palette); class 0, the background, stays as it is.
    An image under MIN_SIDE pixels is drawn enlarged by a whole factor, as draw_boxes does."""
    zoom = max(1, MIN_SIDE // max(image.shape[:2]))
    image = np.repeat(np.repeat(np.asarray(image), zoom, 0), zoom, 1).astype(np.float32)
    classes = np.repeat(np.repeat(np.asarray(classes), zoom, 0), zoom, 1)
    tint = np.asarray(colours, np.float32)[np.clip(classes, 0, 255)]
    chosen = classes > 0
    image[chosen] = (1 - opacity) * image[chosen] + opacity * tint[chosen]
    return np.round(image).astype(np.uint8)
