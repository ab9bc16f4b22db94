"""The built-in English corpus: the docstrings of Python's own standard library (PSF licence),
read from its source files with `ast` (nothing is imported or run), one sentence per line and
a blank line between docstrings; a WordPiece vocabulary learned on its train split; and BERT
pretraining records of both splits (create_pretraining_data.py's schema), in the cache."""

from __future__ import annotations

import ast
import hashlib
import json
import re
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

from models.data.builtin.cache import build_once

NAME = "python-docs-v2"
# Packages whose docstrings are tests, demos, GUI or vendored text rather than library prose.
SKIPPED = frozenset(
    {"test", "tests", "idlelib", "tkinter", "turtledemo", "lib2to3", "ensurepip", "pydoc_data"}
)
SKIPPED_PREFIXES = ("site-packages", "dist-packages", "config-")
VALIDATION_PERCENT = 5  # of source files, by a hash of the file's path
VOCAB_SIZE = 8000
TRAIN_DUPE_FACTOR = 5  # passes over the train text, each with other masks and pairs
VALIDATION_DUPE_FACTOR = 2  # two maskings of the validation text: a steadier accuracy
# Docstrings are short: at 128 tokens most of a pair was padding (43,080 pairs of 128 tokens,
# 47,372 of 64), so pairs of 64 tokens (the ratio of BERT's 128/20 masked predictions).
MASKING = {"max_seq_length": 64, "max_predictions_per_seq": 10}
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"'`])")
MIN_WORDS = 3


def source_files(root: Path) -> list[Path]:
    """The standard library's .py files, less tests, demos and GUI code."""
    files = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).parts
        if SKIPPED.isdisjoint(parts) and not parts[0].startswith(SKIPPED_PREFIXES):
            files.append(path)
    return files


def docstrings(path: Path) -> Iterator[str]:
    """The docstrings of a module and its classes and functions, in source order."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    for node in ast.walk(tree):
        if isinstance(node, kinds) and (text := ast.get_docstring(node)):
            yield text


def sentences(docstring: str) -> list[str]:
    """The prose sentences of a docstring: paragraphs without indented or doctest lines,
    joined and split after sentence ends; fragments under MIN_WORDS words are dropped."""
    found = []
    for paragraph in docstring.split("\n\n"):
        lines = paragraph.splitlines()
        if any(line.startswith((" ", "\t", ">>>", "...")) for line in lines):
            continue  # code, doctests, indented lists and tables
        for sentence in SENTENCE_END.split(" ".join(" ".join(lines).split())):
            if len(sentence.split()) >= MIN_WORDS:
                found.append(sentence)
    return found


def _is_validation(path: Path, root: Path) -> bool:
    digest = hashlib.sha256(str(path.relative_to(root)).encode()).digest()
    return digest[0] * 100 // 256 < VALIDATION_PERCENT


def write_text(root: Path, out: Path) -> dict[str, int]:
    """train.txt and validation.txt (split by source file); their documents and sentences."""
    counts = {}
    files = {"train": [], "validation": []}
    for path in source_files(root):
        files["validation" if _is_validation(path, root) else "train"].append(path)
    for split, paths in files.items():
        documents = [s for path in paths for doc in docstrings(path) if (s := sentences(doc))]
        lines = [line for document in documents for line in (*document, "")]
        (out / f"{split}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
        counts[f"{split}_documents"] = len(documents)
        counts[f"{split}_sentences"] = sum(len(document) for document in documents)
    return counts


def _write(out: Path) -> None:
    from models.data.convert import bert_pretraining
    from models.data.convert.vocab import learn_vocab
    from models.data.text import VOCAB_FILE, write_vocab

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    counts = write_text(stdlib, out)
    vocab, _, _ = learn_vocab([str(out / "train.txt")], VOCAB_SIZE)
    write_vocab(vocab, str(out / VOCAB_FILE))
    for split, dupe_factor in (
        ("train", TRAIN_DUPE_FACTOR),
        ("validation", VALIDATION_DUPE_FACTOR),
    ):
        masking = bert_pretraining.Masking(dupe_factor=dupe_factor, **MASKING)
        bert_pretraining.convert(
            [str(out / f"{split}.txt")], str(out / VOCAB_FILE), str(out), split, 4, masking
        )
    info = json.loads((out / "dataset_info.json").read_text())
    source = {"source": f"Python {sys.version.split()[0]} standard library docstrings"}
    (out / "dataset_info.json").write_text(json.dumps({**info, **counts, **source}, indent=1))


def prepare() -> str:
    """Directory of the corpus, vocabulary and records, built once into the cache."""
    return build_once(NAME, _write)
