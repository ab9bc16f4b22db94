"""The anchor grid of single-stage detectors (RetinaNet, SSD): pyramid levels, scales and
aspect ratios per location, and how ground truth is matched to anchors. The input pipeline
labels anchors with it and the model sizes its heads from it, so both read one setting."""

from __future__ import annotations

from dataclasses import dataclass

import gin

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

    def __post_init__(self):
        self.aspect_ratios = tuple(self.aspect_ratios)
        check_field_types(self, "anchors")
        if not 1 <= self.min_level <= self.max_level:
            raise UsageError(
                f"anchors.min_level = {self.min_level}, max_level = {self.max_level}: need "
                "1 <= min_level <= max_level"
            )
        if self.num_scales < 1 or not self.aspect_ratios or self.anchor_size <= 0:
            raise UsageError("anchors: num_scales, aspect_ratios and anchor_size must be positive")
        if not 0 < self.unmatched_threshold <= self.match_threshold <= 1:
            raise UsageError(
                "anchors: need 0 < unmatched_threshold <= match_threshold <= 1, got "
                f"{self.unmatched_threshold} and {self.match_threshold}"
            )

    @property
    def per_location(self) -> int:
        """Anchors at each position of each level."""
        return self.num_scales * len(self.aspect_ratios)

    def check_image_size(self, image_size: int, owner: str) -> None:
        """UsageError unless the image divides by the coarsest level's stride (FPN needs it)."""
        stride = 2**self.max_level
        if image_size % stride:
            raise UsageError(
                f"{owner} = {image_size} is not a multiple of 2**anchors.max_level = {stride}"
            )
