"""The built-in translation task: PostgreSQL's English messages and their German translations
(Debian's postgresql-15, which `make` installs), split by message, with its records, the
SentencePiece model that gives every sentence back exactly, and the BLEU of trivial baselines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from models.core.errors import UsageError
from models.data.builtin.pg_messages import (
    CATALOGUES,
    HELD_OUT,
    VOCAB_SIZE,
    catalogues,
    learn_dictionary,
    message_pairs,
    read_catalogue,
    split_pairs,
    word_for_word,
)
from models.data.convert.parallel_text import MODEL_FILE


def test_missing_catalogues_name_the_install_command(tmp_path):
    with pytest.raises(UsageError, match="install them with `apt-get install postgresql-15`"):
        catalogues(tmp_path)


def test_a_catalogue_gives_one_line_pairs_with_words():
    pairs = read_catalogue(CATALOGUES / "pg_config-15.mo")
    assert ("Options:", "Optionen:") in pairs  # "\nOptions:\n" in the catalogue
    assert ("Report bugs to <%s>.", "Berichten Sie Fehler an <%s>.") in pairs
    for english, german in pairs:
        assert english == " ".join(english.split()) and german == " ".join(german.split())
    assert "%s" not in {english for english, _ in read_catalogue(CATALOGUES / "psql-15.mo")}


def test_messages_are_distinct_and_split_by_message():
    pairs, read = message_pairs(catalogues())
    english = [pair[0] for pair in pairs]
    assert len(set(english)) == len(english) > 9000 and read > len(pairs)
    splits = split_pairs(pairs)
    assert sum(len(rows) for rows in splits.values()) == len(pairs)
    seen = [{pair[0] for pair in rows} for rows in splits.values()]
    assert sum(len(s) for s in seen) == len(set().union(*seen))  # no message in two splits
    for split, permille in HELD_OUT.items():
        assert abs(len(splits[split]) / len(pairs) - permille / 1000) < 0.01
    assert split_pairs(list(reversed(pairs))) == splits  # by hash, not by catalogue order


def test_word_for_word_dictionary_learns_by_dice():
    pairs = [
        ("the database", "die Datenbank"),
        ("the server", "der Server"),
        ("a database", "eine Datenbank"),
        ("a server", "ein Server"),
    ]
    dictionary = learn_dictionary(pairs)
    assert dictionary["database"] == "Datenbank" and dictionary["server"] == "Server"
    assert dictionary["the"] in ("die", "der")  # 2 c(e, g) / (c(e) + c(g)) = 2/3 for both
    assert word_for_word("the database: %s", dictionary) == f"{dictionary['the']} Datenbank: %s"


@pytest.mark.slow
def test_builtin_records_model_and_baselines():
    import tensorflow as tf

    from models.data import builtin
    from models.data.translation import TranslationInput

    folder = Path(builtin.prepare("pg_messages"))
    info = json.loads((folder / "dataset_info.json").read_text())
    assert info["source_language"] == "en" and info["target_language"] == "de"
    assert info["num_train_examples"] > 8000
    assert 350 < info["num_validation_examples"] < 550 and 350 < info["num_test_examples"] < 550
    assert info["vocab_size"] == VOCAB_SIZE and (folder / MODEL_FILE).is_file()
    english = {}
    for split in ("train", "validation", "test"):
        stats = info[f"{split}_statistics"]
        assert stats["source_files"] == [f"{split}.en"] and stats["target"]["max"] <= 64
        for side in ("source", "target"):
            assert stats[side]["exact_round_trip"] == 1.0 and stats[side]["unknown_fraction"] == 0
            assert 11 < stats[side]["mean"] < 17
        lines = (folder / f"{split}.en").read_text().splitlines()
        assert len(lines) == info[f"num_{split}_examples"] + stats["dropped_long"]
        english[split] = set(lines)
        records = tf.data.TFRecordDataset(sorted(map(str, folder.glob(f"{split}-*-of-*"))))
        assert sum(1 for _ in records) == info[f"num_{split}_examples"]
    assert not english["train"] & english["validation"] and not english["train"] & english["test"]
    assert not english["validation"] & english["test"]
    for split in HELD_OUT:
        bleu = info["bleu"][split]
        assert 5 < bleu["copy_source"] < 25  # directives, option names, SQL keywords
        assert bleu["word_for_word"] > bleu["copy_source"] + 5
    data = TranslationInput()  # the built-in is the input's default
    data.validate(("train", "validation", "test"))
    assert data.evaluation_set("test")[0][0] in english["test"]
    tokenizer = data.tokenizer()
    for split in HELD_OUT:  # what sacreBLEU scores comes back exactly from the ids
        for texts in data.evaluation_set(split):
            ids = tokenizer.tokenize(tf.constant(texts)).to_list()
            assert data.detokenize([[*row, data.eos_id, 0, 0] for row in ids]) == texts
