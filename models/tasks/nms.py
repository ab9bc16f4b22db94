"""Which of Model Garden's non-max suppressions a detector runs: "v2" (its default, per-class
NMS padded to static shapes, which XLA and TPUs compile), "batched" (TensorFlow's combined NMS,
one C++ kernel that XLA lacks: on CPU, RetinaNet's evaluation step runs 25x faster than with
v2, so the CPU default recipes set it) or "v1"."""

from __future__ import annotations

from models.core.errors import check_choice

NMS_VERSIONS = ("v2", "batched", "v1")


def check_nms_version(version: str, owner: str) -> str:
    """`version` if Model Garden has it, else a UsageError naming `owner` (the gin setting)."""
    return check_choice(version, NMS_VERSIONS, owner)
