"""The built-in sentence-classification task: WordNet's noun definitions by lexicographer
class, as GLUE-style TSV (Debian's wordnet-base, which `make` installs)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from official.nlp.data.classifier_data_lib import DataProcessor

from models.core.errors import UsageError
from models.data.builtin.wordnet_glosses import NOUN_FILES, read_glosses

HEADER = "  1 This software and database is being provided to you, the LICENSEE | by Princeton\n"
LINES = (
    "00015388 03 n 01 animal 0 001 @ 00004475 n 0000 | a living organism characterized by "
    'voluntary movement; "an animal is a living thing"  \n'
    "02084071 05 n 01 dog 0 001 @ 02083346 n 0000 | a member of the genus Canis  \n"
)


def test_glosses_are_definitions_labelled_by_lexicographer_file(tmp_path):
    path = tmp_path / "data.noun"
    path.write_text(HEADER + LINES)
    assert read_glosses(path) == [
        ("00015388", "a living organism characterized by voluntary movement", "noun.Tops"),
        ("02084071", "a member of the genus Canis", "noun.animal"),
    ]


def test_missing_wordnet_names_the_install_command(tmp_path):
    with pytest.raises(UsageError, match="install it with `apt-get install wordnet-base`"):
        read_glosses(tmp_path / "data.noun")


def test_builtin_task_has_26_classes_split_by_synset():
    from models.data import builtin

    folder = Path(builtin.prepare("wordnet_glosses"))
    info = json.loads((folder / "dataset_info.json").read_text())
    assert info["labels"] == sorted(NOUN_FILES.values()) and len(info["labels"]) == 26
    rows = {}
    for split in ("train", "dev"):
        lines = DataProcessor._read_tsv(str(folder / f"{split}.tsv"))  # GLUE's reader
        assert lines[0] == ["sentence", "label"]
        rows[split] = lines[1:]
        assert len(rows[split]) == info[f"num_{split}_examples"]
        assert all(len(row) == 2 and row[1] in info["labels"] for row in rows[split])
    assert len(rows["train"]) > 70_000 and len(rows["dev"]) > 8_000
    assert info["dev_majority_class"] == "noun.artifact"
    assert 0.1 < info["dev_majority_fraction"] < 0.2  # the trivial baseline a target must beat
    with (folder / "train.tsv").open() as file:
        assert sum(1 for _ in csv.reader(file, delimiter="\t")) == len(rows["train"]) + 1
