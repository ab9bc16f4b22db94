"""The built-in sentence-classification task: WordNet 3.0's noun definitions (Princeton's
WordNet licence, Debian's wordnet-base package), each labelled with its synset's lexicographer
file (noun.animal, noun.artifact, ... 26 classes), as GLUE-style TSV files (`sentence`,
`label`), split by synset."""

from __future__ import annotations

import csv
import hashlib
import json
from collections import Counter
from pathlib import Path

from models.core.errors import UsageError
from models.data.builtin.cache import build_once

NAME = "wordnet-glosses-v2"
WORDNET_NOUNS = Path("/usr/share/wordnet/data.noun")
INSTALL = "apt-get install wordnet-base"
# WordNet's lexicographer files of nouns, by number (lexnames(5WN)).
NOUN_FILES = {
    3: "noun.Tops", 4: "noun.act", 5: "noun.animal", 6: "noun.artifact", 7: "noun.attribute",
    8: "noun.body", 9: "noun.cognition", 10: "noun.communication", 11: "noun.event",
    12: "noun.feeling", 13: "noun.food", 14: "noun.group", 15: "noun.location",
    16: "noun.motive", 17: "noun.object", 18: "noun.person", 19: "noun.phenomenon",
    20: "noun.plant", 21: "noun.possession", 22: "noun.process", 23: "noun.quantity",
    24: "noun.relation", 25: "noun.shape", 26: "noun.state", 27: "noun.substance",
    28: "noun.time",
}  # fmt: skip
DEV_PERCENT = 10  # of synsets, by a hash of the synset offset


def read_synsets(path: Path = WORDNET_NOUNS) -> list[tuple[str, str, tuple[str, ...], str]]:
    """(offset, lexicographer file, words, definition) of every noun synset with a definition:
    the gloss up to its first ';' (what follows are usage examples); words with spaces."""
    if not path.is_file():
        raise UsageError(
            f"the built-in WordNet datasets read Debian's WordNet at {path}, which is missing: "
            f"install it with `{INSTALL}` (`make` does, as root)"
        )
    synsets = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("  ") or "|" not in line:  # the licence header
            continue
        fields, gloss = line.split("|", 1)
        offset, lex_file, _, count, *rest = fields.split()
        words = tuple(word.replace("_", " ") for word in rest[: 2 * int(count, 16) : 2])
        definition = gloss.split(";")[0].strip()
        if definition:
            synsets.append((offset, NOUN_FILES[int(lex_file)], words, definition))
    return synsets


def read_glosses(path: Path = WORDNET_NOUNS) -> list[tuple[str, str, str]]:
    """(synset offset, definition, lexicographer file) of every noun synset."""
    return [(offset, definition, label) for offset, label, _, definition in read_synsets(path)]


def digest(offset: str) -> bytes:
    return hashlib.sha256(offset.encode()).digest()


def is_dev(offset: str) -> bool:
    return digest(offset)[0] * 100 // 256 < DEV_PERCENT


def _write_tsv(path: Path, rows: list[tuple[str, str]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file, delimiter="\t", quoting=csv.QUOTE_NONE, escapechar="\\")
        writer.writerows([("sentence", "label"), *rows])


def _write(out: Path) -> None:
    # WordNet's data file runs class by class; GLUE's files are in random order, and an input's
    # shuffle buffer cannot undo a file sorted by label. Rows go in the order of their hash.
    glosses = sorted(read_glosses(), key=lambda gloss: digest(gloss[0])[1:])
    splits = {"train": [], "dev": []}
    for offset, definition, label in glosses:
        splits["dev" if is_dev(offset) else "train"].append((definition, label))
    info: dict = {"labels": sorted(set(NOUN_FILES.values())), "source": "WordNet 3.0 nouns"}
    for split, rows in splits.items():
        _write_tsv(out / f"{split}.tsv", rows)
        counts = Counter(label for _, label in rows)
        info[f"num_{split}_examples"] = len(rows)
        info[f"{split}_majority_class"] = counts.most_common(1)[0][0]
        info[f"{split}_majority_fraction"] = round(counts.most_common(1)[0][1] / len(rows), 4)
    (out / "dataset_info.json").write_text(json.dumps(info, indent=1) + "\n")


def prepare() -> str:
    """Directory of train.tsv, dev.tsv and dataset_info.json, built once into the cache."""
    return build_once(NAME, _write)
