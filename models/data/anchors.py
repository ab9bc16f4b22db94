"""The anchor grid of single-stage detectors (RetinaNet, SSD) and of region proposal networks
(Faster/Mask R-CNN): pyramid levels, scales and aspect ratios per location, and how ground
truth is matched to anchors. The input pipeline labels anchors with it and the model sizes its
heads from it, so both read one setting."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import gin
import numpy as np

from models.core.errors import UsageError
from models.core.gin_types import check_field_types


@gin.configurable("anchors")
@dataclass
class Anchors:
    """RetinaNet's defaults (Lin et al. 2017, arXiv 1708.02002 sec. 4): levels P3-P7, 3 scales
    x 3 aspect ratios per location, base size 4 x stride; IoU >= 0.5 positive, < 0.5 negative
    (Model Garden's retinanet_resnetfpn_coco)."""

    min_level: int = 3
    max_level: int = 7
    num_scales: int = 3
    aspect_ratios: tuple[float, ...] = (0.5, 1.0, 2.0)
    anchor_size: float = 4.0
    match_threshold: float = 0.5
    unmatched_threshold: float = 0.5
    #: The gin name, in error messages.
    scope: ClassVar[str] = "anchors"

    def __post_init__(self):
        self.aspect_ratios = tuple(self.aspect_ratios)
        check_field_types(self, self.scope)
        if not 1 <= self.min_level <= self.max_level:
            raise UsageError(
                f"{self.scope}.min_level = {self.min_level}, max_level = {self.max_level}: "
                "need 1 <= min_level <= max_level"
            )
        if self.num_scales < 1 or not self.aspect_ratios or self.anchor_size <= 0:
            raise UsageError(
                f"{self.scope}: num_scales, aspect_ratios and anchor_size must be positive"
            )
        if not 0 < self.unmatched_threshold <= self.match_threshold <= 1:
            raise UsageError(
                f"{self.scope}: need 0 < unmatched_threshold <= match_threshold <= 1, got "
                f"{self.unmatched_threshold} and {self.match_threshold}"
            )

    @property
    def per_location(self) -> int:
        """Anchors at each position of each level."""
        return self.num_scales * len(self.aspect_ratios)

    def model_config_fields(self, anchor_config: type) -> dict:
        """The pyramid levels and `anchor` of a Model Garden model config, `anchor_config`
        being that config's Anchor class (RetinaNet's or Mask R-CNN's)."""
        anchor = anchor_config(
            num_scales=self.num_scales,
            aspect_ratios=list(self.aspect_ratios),
            anchor_size=self.anchor_size,
        )
        return {"min_level": self.min_level, "max_level": self.max_level, "anchor": anchor}

    def check_image_size(self, image_size: int, owner: str) -> None:
        """UsageError unless the image divides by the coarsest level's stride (FPN needs it)."""
        stride = 2**self.max_level
        if image_size % stride:
            raise UsageError(
                f"{owner} = {image_size} is not a multiple of 2**{self.scope}.max_level = {stride}"
            )


@gin.configurable("rpn_anchors")
@dataclass
class RpnAnchors(Anchors):
    """A region proposal network's anchors (Faster R-CNN, Ren et al. 2015; with FPN, Lin et
    al. 2017): levels P2-P6, one scale x 3 aspect ratios, base size 8 x stride; IoU >= 0.7
    positive, < 0.3 negative, and `batch_size_per_im` anchors sampled per image, at most
    `fg_fraction` of them positive (Model Garden's maskrcnn_resnetfpn_coco).

    `scales`, where set, lists each location's scales of the base size outright, as the
    Object Detection API's grid anchor generator does (0.25, 0.5, 1, 2: four octaves on one
    level), in place of Model Garden's `num_scales` steps within an octave (2**(i/num_scales))."""

    min_level: int = 2
    max_level: int = 6
    num_scales: int = 1
    anchor_size: float = 8.0
    match_threshold: float = 0.7
    unmatched_threshold: float = 0.3
    batch_size_per_im: int = 256
    fg_fraction: float = 0.5
    scales: tuple[float, ...] = ()
    scope: ClassVar[str] = "rpn_anchors"

    def __post_init__(self):
        self.scales = tuple(self.scales)
        super().__post_init__()
        if any(scale <= 0 for scale in self.scales):
            raise UsageError(f"{self.scope}.scales = {self.scales}: every scale must be positive")
        if self.batch_size_per_im < 1 or not 0 < self.fg_fraction <= 1:
            raise UsageError(
                f"{self.scope}: need batch_size_per_im >= 1 and 0 < fg_fraction <= 1, got "
                f"{self.batch_size_per_im} and {self.fg_fraction}"
            )

    @property
    def per_location(self) -> int:
        return len(self._scales()) * len(self.aspect_ratios)

    def model_config_fields(self, anchor_config: type) -> dict:
        """As Anchors', `num_scales` counting the listed `scales` (the RPN head's size)."""
        fields = super().model_config_fields(anchor_config)
        fields["anchor"] = fields["anchor"].replace(num_scales=len(self._scales()))
        return fields

    def _scales(self) -> tuple[float, ...]:
        return self.scales or tuple(2 ** (i / self.num_scales) for i in range(self.num_scales))

    def boxes(self, image_size: int) -> dict[str, np.ndarray]:
        """Level -> [cells, cells, anchors per cell * 4] float32 (ymin, xmin, ymax, xmax) pixels
        of a square `image_size` image: Model Garden's multilevel anchor layout (centres half a
        stride in, scale-major, aspect ratio w/h), any scales."""
        out = {}
        for level in range(self.min_level, self.max_level + 1):
            cells = -(-image_size // 2**level)
            stride = image_size / cells
            centres = np.arange(cells) * stride + stride / 2
            cy, cx = np.meshgrid(centres, centres, indexing="ij")
            per_cell = []
            for scale in self._scales():
                for ratio in self.aspect_ratios:
                    half = self.anchor_size * 2**level * scale / 2
                    hy, hx = half / np.sqrt(ratio), half * np.sqrt(ratio)
                    per_cell.append(np.stack([cy - hy, cx - hx, cy + hy, cx + hx], axis=-1))
            out[str(level)] = np.concatenate(per_cell, axis=-1).astype(np.float32)
        return out


@gin.configurable("ssd_anchors")
@dataclass
class SsdAnchors:
    """SSD's default boxes (Liu et al. 2016 sec. 2.2), as MLPerf's SSD-ResNet34 at 300x300
    lays them out (mlcommons/training single_stage_detector): at level i a square feature map
    of `feature_sizes[i]` cells, `steps[i]` pixels apart, and at each cell a square box of side
    scales[i], one of sqrt(scales[i] * scales[i + 1]) and, for each aspect ratio r of
    `aspect_ratios[i]`, boxes of scales[i] * sqrt(r) by scales[i] / sqrt(r) both ways; centres
    and sides are clipped to the image. Levels are keyed "3", "4", ... as the head's outputs
    (whatever the strides). IoU >= 0.5 positive, below it negative."""

    image_size: int = 300
    feature_sizes: tuple[int, ...] = (38, 19, 10, 5, 3, 1)
    steps: tuple[int, ...] = (8, 16, 32, 64, 100, 300)
    scales: tuple[int, ...] = (21, 45, 99, 153, 207, 261, 315)
    aspect_ratios: tuple[tuple[int, ...], ...] = ((2,), (2, 3), (2, 3), (2, 3), (2,), (2,))
    match_threshold: float = 0.5
    unmatched_threshold: float = 0.5
    min_level: ClassVar[int] = 3

    def __post_init__(self):
        self.aspect_ratios = tuple(tuple(ratios) for ratios in self.aspect_ratios)
        levels = len(self.feature_sizes)
        if not levels or not len(self.steps) == len(self.aspect_ratios) == levels:
            raise UsageError(
                "ssd_anchors: feature_sizes, steps and aspect_ratios need one entry per level "
                f"and scales one more, got {levels}, {len(self.steps)}, "
                f"{len(self.aspect_ratios)} and {len(self.scales)}"
            )
        if len(self.scales) != levels + 1:
            raise UsageError(f"ssd_anchors.scales needs {levels + 1} entries (one per level + 1)")

    @property
    def levels(self) -> list[str]:
        return [str(self.min_level + i) for i in range(len(self.feature_sizes))]

    def per_location(self) -> dict[str, int]:
        """Boxes at each cell of each level: 2 squares + 2 per aspect ratio."""
        return {lv: 2 + 2 * len(r) for lv, r in zip(self.levels, self.aspect_ratios, strict=True)}

    def check_image_size(self, image_size: int, owner: str) -> None:
        """UsageError unless the boxes were laid out for `image_size`."""
        if image_size != self.image_size:
            raise UsageError(
                f"{owner} = {image_size}, but ssd_anchors.image_size = {self.image_size}: set "
                "both, with feature_sizes and steps for that size"
            )

    def boxes(self) -> dict[str, np.ndarray]:
        """Level -> [size, size, boxes per cell * 4] float32 (ymin, xmin, ymax, xmax) pixels,
        Model Garden's multilevel anchor layout."""
        out = {}
        for index, level in enumerate(self.levels):
            sides = self._sides(index)
            size, step = self.feature_sizes[index], self.steps[index]
            centres = np.minimum((np.arange(size) + 0.5) * step, self.image_size)
            cy, cx = np.meshgrid(centres, centres, indexing="ij")
            half = np.minimum(sides, self.image_size) / 2.0  # [boxes, 2]: height, width
            corners = np.stack(
                [
                    cy[..., None] - half[:, 0],
                    cx[..., None] - half[:, 1],
                    cy[..., None] + half[:, 0],
                    cx[..., None] + half[:, 1],
                ],
                axis=-1,
            )
            out[level] = corners.reshape(size, size, -1).astype(np.float32)
        return out

    def _sides(self, index: int) -> np.ndarray:
        """[boxes, 2] (height, width) of the boxes at each cell of level `index`."""
        scale, following = self.scales[index], self.scales[index + 1]
        sides = [(scale, scale), (np.sqrt(scale * following),) * 2]
        for ratio in self.aspect_ratios[index]:
            root = np.sqrt(ratio)
            sides += [(scale / root, scale * root), (scale * root, scale / root)]
        return np.array(sides, np.float64)


@gin.configurable("grid_anchors")
@dataclass
class GridAnchors(RpnAnchors):
    """The Object Detection API's first-stage grid (grid_anchor_generator in its
    faster_rcnn_resnet*_coco17 configs): on C4 alone (stride 16), scales 0.25, 0.5, 1 and 2 of
    a 256-pixel base (16 x stride) x aspect ratios 0.5, 1, 2; IoU >= 0.7 positive, < 0.3
    negative, 256 sampled per image, half of them positive at most."""

    min_level: int = 4
    max_level: int = 4
    anchor_size: float = 16.0
    scales: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0)
    scope: ClassVar[str] = "grid_anchors"


# The anchor layouts a detector's input can label, by gin name (registry.ModelEntry.anchors).
ANCHOR_LAYOUTS = {
    "anchors": Anchors,
    "rpn_anchors": RpnAnchors,
    "grid_anchors": GridAnchors,
    "ssd_anchors": SsdAnchors,
}
