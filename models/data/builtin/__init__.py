"""Embedded offline datasets, written once into a local cache in the real datasets' schemas."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from models.core.errors import UsageError, nearest

DEFAULT_CACHE_DIR = "~/.cache/tpu-pod-zoo"
BUILDING = "building the built-in dataset"  # the line a first use prints (stderr)
LOCKS = ".locks"  # the cache's folder of per-dataset lock files (build_once)


def cache_dir() -> Path:
    """Root of the built-in dataset cache: $ZOO_CACHE_DIR, else ~/.cache/tpu-pod-zoo."""
    return Path(os.environ.get("ZOO_CACHE_DIR") or DEFAULT_CACHE_DIR).expanduser()


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


def _digits() -> str:
    """Prepares the scikit-learn handwritten digits (imported lazily: it pulls in sklearn)."""
    from models.data.builtin import digits

    return digits.prepare()


def _digit_scenes() -> str:
    """Prepares the COCO-layout digit scenes (imported lazily: it pulls in sklearn and cv2)."""
    from models.data.builtin import digit_scenes

    return digit_scenes.prepare()


def _digit_scenes_voc() -> str:
    """Prepares the VOC-layout digit scenes with class maps (imported lazily: it pulls in sklearn,
    cv2 and, converting them, TensorFlow)."""
    from models.data.builtin import digit_scenes_voc

    return digit_scenes_voc.prepare()


def _python_docs() -> str:
    """Prepares the standard library's docstrings as BERT's corpus (imported lazily: it pulls in
    tensorflow-text and Model Garden's NLP data tools)."""
    from models.data.builtin import python_docs

    return python_docs.prepare()


def _wordnet_glosses() -> str:
    """Prepares WordNet's noun definitions by lexicographer class (Debian's wordnet-base)."""
    from models.data.builtin import wordnet_glosses

    return wordnet_glosses.prepare()


def _wordnet_qa() -> str:
    """Prepares SQuAD-style questions on WordNet's noun entries and their BERT records (imported
    lazily: converting them pulls in TensorFlow and Model Garden's SQuAD tools)."""
    from models.data.builtin import wordnet_qa

    return wordnet_qa.prepare()


def _pg_messages() -> str:
    """Prepares PostgreSQL's English-German messages as translation records (Debian's
    postgresql-15; imported lazily: converting them pulls in TensorFlow and tensorflow-text)."""
    from models.data.builtin import pg_messages

    return pg_messages.prepare()


BUILTINS: dict[str, Callable[[], str]] = {
    "digits": _digits,
    "digit_scenes": _digit_scenes,
    "digit_scenes_voc": _digit_scenes_voc,
    "python_docs": _python_docs,
    "wordnet_glosses": _wordnet_glosses,
    "wordnet_qa": _wordnet_qa,
    "pg_messages": _pg_messages,
}


def prepare(name: str) -> str:
    """Directory of the built-in dataset `name`, written into the cache on first use."""
    if name not in BUILTINS:
        raise UsageError(
            f"unknown built-in dataset '{name}'{nearest(name, BUILTINS)}; "
            f"known: {', '.join(sorted(BUILTINS))}"
        )
    return BUILTINS[name]()
