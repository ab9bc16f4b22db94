"""Embedded offline datasets, written once into a local cache in the real datasets' schemas."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from models.core.errors import UsageError, nearest

DEFAULT_CACHE_DIR = "~/.cache/tpu-pod-zoo"


def cache_dir() -> Path:
    """Root of the built-in dataset cache: $ZOO_CACHE_DIR, else ~/.cache/tpu-pod-zoo."""
    return Path(os.environ.get("ZOO_CACHE_DIR") or DEFAULT_CACHE_DIR).expanduser()


def _digits() -> str:
    """Prepares the scikit-learn handwritten digits (imported lazily: it pulls in sklearn)."""
    from models.data.builtin import digits

    return digits.prepare()


BUILTINS: dict[str, Callable[[], str]] = {"digits": _digits}


def prepare(name: str) -> str:
    """Directory of the built-in dataset `name`, written into the cache on first use."""
    if name not in BUILTINS:
        raise UsageError(
            f"unknown built-in dataset '{name}'{nearest(name, BUILTINS)}; "
            f"known: {', '.join(sorted(BUILTINS))}"
        )
    return BUILTINS[name]()
