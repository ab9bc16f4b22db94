"""The built-in dataset cache: each dataset written once, atomically, under a file lock."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from models.core.errors import UsageError

DEFAULT_CACHE_DIR = "~/.cache/tpu-pod-zoo"
BUILDING = "building the built-in dataset"  # the line a first use prints (stderr)
PROGRESS_INDENT = "  "  # a build's progress lines, under that one
LOCKS = ".locks"  # the cache's folder of per-dataset lock files (build_once)


def cache_dir() -> Path:
    """Root of the built-in dataset cache: $ZOO_CACHE_DIR, else ~/.cache/tpu-pod-zoo."""
    return Path(os.environ.get("ZOO_CACHE_DIR") or DEFAULT_CACHE_DIR).expanduser()


def build_progress(text: str) -> None:
    """One line of a long build's progress on stderr, indented under its BUILDING notice (a
    command's one error line after a first use's build is still its only unindented one)."""
    print(f"{PROGRESS_INDENT}{text}", file=sys.stderr, flush=True)


def build_once(name: str, write: Callable[[Path], None], root: Path | None = None) -> str:
    """root/name (root: the cache), written once by write(staging dir) into a temp dir beside
    it and renamed in, so no reader (another test worker) ever sees half a dataset. A dataset
    is complete when its dataset_info.json exists: write it last. Processes that need it at
    the same time wait for the one that builds it (a file lock) instead of building it again."""
    root = Path(root) if root is not None else cache_dir()
    target = root / name
    if not _complete(target):
        root.mkdir(parents=True, exist_ok=True)
        with _locked(root / LOCKS / name):
            if not _complete(target):
                _build(name, write, root, target)
    return str(target)


@contextlib.contextmanager
def _locked(path: Path):
    """An exclusive lock on `path` for the block (released if the process dies). Lock files
    stay: removing one while another process waits on it would let a third build again."""
    path.parent.mkdir(exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _build(name: str, write: Callable[[Path], None], root: Path, target: Path) -> None:
    """Writes the dataset, saying so first on stderr (stdout may be a command's JSON): the
    first run of a family spends seconds to a minute here."""
    print(f"{BUILDING} {name} in {root} (once)", file=sys.stderr, flush=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}.tmp-", dir=root))
    try:
        staging.chmod(0o755)  # mkdtemp makes it private; the cache is shared.
        write(staging)
        _publish(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _complete(directory: Path) -> bool:
    return (directory / "dataset_info.json").is_file()


def _publish(staging: Path, target: Path) -> None:
    """Renames staging to target; losing the race to a concurrent writer is fine."""
    try:
        staging.rename(target)
    except OSError:
        if not _complete(target):
            raise UsageError(
                f"{target} exists but is not a complete dataset; delete it and retry"
            ) from None
