"""Which of Model Garden's non-max suppressions a detector runs: "v2" (its default, per-class
NMS padded to static shapes for TPU) or "batched" (TensorFlow's combined NMS, one C++ kernel:
on CPU 25x faster than v2 at evaluation and what the CPU recipes set), or "v1"."""

from __future__ import annotations

from models.core.errors import UsageError

NMS_VERSIONS = ("v2", "batched", "v1")


def check_nms_version(version: str, owner: str) -> str:
    """`version` if Model Garden has it, else a UsageError naming `owner` (the gin setting)."""
    if version not in NMS_VERSIONS:
        raise UsageError(f"{owner} = {version!r}: use one of {', '.join(NMS_VERSIONS)}")
    return version
