"""Published results, read from the headers of the official/ recipes (the one copy of them)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

from models.core.errors import UsageError
from models.core.paths import OFFICIAL_DIR

_HEADER = re.compile(r"^#\s*published\.(\w+):\s*(.+?)\s*$")
REQUIRED = ("family", "model", "round", "slice", "global_batch", "minutes", "target")


class Published(NamedTuple):
    """One published time to train (Google's Cloud TPU MLPerf submissions)."""

    round: str
    slice: str
    global_batch: int
    minutes: float
    target: str


def read_header(path: Path) -> dict[str, str]:
    """The `# published.KEY: VALUE` lines of an official recipe; UsageError if one is missing."""
    header = {}
    for line in path.read_text().splitlines():
        if match := _HEADER.match(line):
            header[match.group(1)] = match.group(2)
    for key in REQUIRED:
        if key not in header:
            raise UsageError(f"{path}: header has no 'published.{key}' line")
    return header


def published_results(model: str) -> tuple[Published, ...]:
    """Every published row of `model` (e.g. 'resnet50') in official/."""
    rows = []
    for path in sorted(OFFICIAL_DIR.glob("*.gin")):
        header = read_header(path)
        if header["model"] == model:
            batch, minutes = int(header["global_batch"]), float(header["minutes"])
            row = Published(header["round"], header["slice"], batch, minutes, header["target"])
            rows.append(row)
    return tuple(rows)
