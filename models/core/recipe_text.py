"""Gin recipe files read as text, their `include` lines followed in place: what a recipe names
(its `run.model`, the slice files it includes) without touching gin's global state."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from models.core.paths import CONFIGS_DIR

_INCLUDE = re.compile(r"""^\s*include\s+['"]([^'"]+)['"]""")
_MAX_DEPTH = 8


def included_files(path: Path, depth: int = 0) -> Iterator[Path]:
    """Every file `path` includes, at any depth, in the order gin reads them (includes
    resolve under configs/, as the recipes write them)."""
    if depth >= _MAX_DEPTH:
        return
    for line in Path(path).read_text().splitlines():
        if include := _INCLUDE.match(line):
            included = CONFIGS_DIR / include.group(1)
            if included.is_file():
                yield included
                yield from included_files(included, depth + 1)


def expanded_lines(path: Path, depth: int = 0) -> Iterator[str]:
    """The lines of `path` with each `include` replaced by the included file's lines."""
    for line in Path(path).read_text().splitlines():
        include = _INCLUDE.match(line)
        included = CONFIGS_DIR / include.group(1) if include else None
        if included is not None and included.is_file() and depth < _MAX_DEPTH:
            yield from expanded_lines(included, depth + 1)
        else:
            yield line
