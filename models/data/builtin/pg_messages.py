"""The built-in translation task: English-German sentence pairs from PostgreSQL 15's German
message catalogues, which PostgreSQL's translators wrote by hand (the PostgreSQL Licence, a
permissive BSD-style licence: Debian's /usr/share/doc/postgresql-15/copyright). Debian's
postgresql-15, postgresql-client-15 and libpq5 install them as
/usr/share/locale/de/LC_MESSAGES/*-15.mo; Python's gettext reads them.

Each English message (msgid) and its German translation, with runs of whitespace collapsed to
one space (help texts' line breaks and column layout); printf directives (%s, %u, %m) are kept
on both sides, as a model must copy them. Left out: the catalogue headers, messages with no
word outside their directives ("%s: %s"), and the plural forms of plural messages (gettext
keeps only the singular msgid, which pairs with German's singular form). A message in several
catalogues is one pair (its most frequent translation). Messages go to validation (5%), test
(5%) or train by a hash of the English text, so a split never shares a message with another,
and a message keeps its split when catalogues change; within a split, in hash order.

Written as WMT-style text files (train.en, train.de, ...) and through the parallel-text
converter into its records, with a SentencePiece model of VOCAB_SIZE tokens learned from the
train split's two sides (which gives back every sentence of every split exactly); pairs longer
than MAX_LENGTH tokens are dropped (counted). dataset_info.json adds the sacreBLEU of trivial
baselines on validation and test: copying the source, and replacing each English word by its
dictionary word (learned from the train split: the German word of highest Dice coefficient
over the pairs that hold each)."""

from __future__ import annotations

import gettext
import hashlib
import itertools
import json
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from models.core.errors import UsageError
from models.data.builtin.cache import build_once

NAME = "pg-messages-de-v2"  # v1: a WordPiece vocabulary
POSTGRESQL = 15  # Debian 12's PostgreSQL
CATALOGUES = Path("/usr/share/locale/de/LC_MESSAGES")
PATTERN = f"*-{POSTGRESQL}.mo"
INSTALL = f"apt-get install postgresql-{POSTGRESQL}"  # pulls in its client and libpq5
LANGUAGES = ("en", "de")
HELD_OUT = {"validation": 50, "test": 50}  # per mille of messages, by a hash of the English
VOCAB_SIZE = 4000  # SentencePiece tokens; 8000 saves 8% of the tokens on ~8.4k pairs
MAX_LENGTH = 64  # tokens a side with end of sequence; ~0.5% of the pairs are longer
TRAIN_SHARDS = 4
# printf directives, PostgreSQL's %m (strerror) among them: "%s", "%-*s", "%lld", "%.*s".
DIRECTIVE = re.compile(r"%[-+ #0']*(?:\*|\d+)?(?:\.(?:\*|\d+))?(?:hh|h|ll|l|L|z|j|t)?[a-zA-Z%]")
LETTER = re.compile(r"[^\W\d_]")
WORD = re.compile(r"\w+")


def catalogues(folder: Path = CATALOGUES) -> list[Path]:
    """The German catalogues of PostgreSQL's programs and libraries; UsageError naming the
    install command when there are none."""
    found = sorted(folder.glob(PATTERN))
    if not found:
        raise UsageError(
            f"the built-in translation data reads PostgreSQL {POSTGRESQL}'s German message "
            f"catalogues ({folder / PATTERN}), which are missing: install them with "
            f"`{INSTALL}` (`make` does, as root)"
        )
    return found


def normalise(text: str) -> str:
    """One line: every run of whitespace one space, none at the ends."""
    return " ".join(text.split())


def read_catalogue(path: Path) -> list[tuple[str, str]]:
    """(English, German) of every message with a word outside its printf directives, in the
    catalogue's order; a plural message's singular forms."""
    with path.open("rb") as file:
        catalogue = gettext.GNUTranslations(file)._catalog
    pairs = []
    for key, translation in catalogue.items():
        if isinstance(key, tuple):  # (msgid, form): gettext keeps the singular msgid only
            key, form = key
            if form != 0:  # German's form 0 is the singular (plural=n != 1)
                continue
        english, german = normalise(key), normalise(translation)
        if english and german and LETTER.search(DIRECTIVE.sub("", english)):
            pairs.append((english, german))
    return pairs


def message_pairs(paths: Sequence[Path]) -> tuple[list[tuple[str, str]], int]:
    """(one (English, German) pair per English message: its most frequent translation, the
    first catalogue's on ties; the messages read, duplicates included)."""
    translations: dict[str, Counter] = {}
    read = 0
    for path in paths:
        for english, german in read_catalogue(path):
            translations.setdefault(english, Counter())[german] += 1
            read += 1
    pairs = [(english, counts.most_common(1)[0][0]) for english, counts in translations.items()]
    return pairs, read


def digest(english: str) -> bytes:
    return hashlib.sha256(english.encode("utf-8")).digest()


def split_of(english: str) -> str:
    """validation, test or train, by a hash of the English message."""
    permille = int.from_bytes(digest(english)[:4], "big") % 1000
    for split, share in HELD_OUT.items():
        if permille < share:
            return split
        permille -= share
    return "train"


def split_pairs(pairs: Sequence[tuple[str, str]]) -> dict[str, list[tuple[str, str]]]:
    """The pairs of each split, in the order of their hashes."""
    splits: dict[str, list[tuple[str, str]]] = {"train": [], **{split: [] for split in HELD_OUT}}
    for pair in sorted(pairs, key=lambda pair: digest(pair[0])):
        splits[split_of(pair[0])].append(pair)
    return splits


# ---------------------------------------------------------------- baselines


def learn_dictionary(pairs: Sequence[tuple[str, str]]) -> dict[str, str]:
    """Each English word's German word: the one of highest Dice coefficient 2 c(e, g) / (c(e)
    + c(g)), c counting the pairs that hold the words (ties: more pairs together, then the
    alphabet). Words are runs of letters, digits and underscores, case kept."""
    english_counts, german_counts, joint = Counter(), Counter(), Counter()
    for english, german in pairs:
        english_words, german_words = set(WORD.findall(english)), set(WORD.findall(german))
        english_counts.update(english_words)
        german_counts.update(german_words)
        joint.update(itertools.product(english_words, german_words))
    best: dict[str, tuple[float, int, str]] = {}
    for (english, german), together in joint.items():
        dice = 2 * together / (english_counts[english] + german_counts[german])
        score = (dice, together, german)
        if english not in best or score > best[english]:
            best[english] = score
    return {english: score[2] for english, score in best.items()}


def word_for_word(text: str, dictionary: dict[str, str]) -> str:
    """text with every word the dictionary knows replaced, everything else kept."""
    return WORD.sub(lambda match: dictionary.get(match.group(), match.group()), text)


def bleu(hypotheses: Sequence[str], references: Sequence[str]) -> float:
    """sacreBLEU's corpus BLEU (13a tokenisation, case-sensitive) of detokenised text."""
    import sacrebleu

    return round(sacrebleu.corpus_bleu(list(hypotheses), [list(references)]).score, 2)


def baselines(folder: str) -> dict[str, dict[str, float]]:
    """BLEU on validation and test of copying the source and of the word-for-word dictionary."""
    from models.data.convert.parallel_text import read_split
    from models.data.records import find_files

    info = json.loads(Path(folder, "dataset_info.json").read_text())
    languages = (info["source_language"], info["target_language"])

    def evaluation_set(split: str) -> tuple[list[str], list[str]]:
        return read_split(find_files(folder, f"{split}-*-of-*", split), languages)

    train = list(zip(*evaluation_set("train"), strict=True))
    dictionary = learn_dictionary(train)
    scores = {}
    for split in HELD_OUT:
        sources, references = evaluation_set(split)
        scores[split] = {
            "copy_source": bleu(sources, references),
            "word_for_word": bleu([word_for_word(s, dictionary) for s in sources], references),
        }
    return scores


# ---------------------------------------------------------------- writing


def _write(out: Path) -> None:
    from models.data.convert import parallel_text

    paths = catalogues()
    pairs, read = message_pairs(paths)
    lengths = parallel_text.Lengths(MAX_LENGTH, long="drop")
    for split, rows in split_pairs(pairs).items():
        files = []
        for side, language in enumerate(LANGUAGES):
            files.append(str(out / f"{split}.{language}"))
            text = "".join(f"{row[side]}\n" for row in rows)
            Path(files[-1]).write_text(text, encoding="utf-8")
        training = split == "train"
        parallel_text.convert(
            [files[0]],
            [files[1]],
            str(out),
            split,
            vocab_size=VOCAB_SIZE if training else None,  # the others: the folder's model
            lengths=lengths,
            num_shards=TRAIN_SHARDS if training else 1,
        )
    info = json.loads((out / "dataset_info.json").read_text())
    for split in ("train", *HELD_OUT):  # the converter named the files in the staging folder
        statistics = info[f"{split}_statistics"]
        for key in ("source_files", "target_files"):
            statistics[key] = [Path(path).name for path in statistics[key]]
    extra = {
        "source": f"PostgreSQL {POSTGRESQL} German message catalogues ({CATALOGUES / PATTERN})",
        "licence": f"PostgreSQL Licence (/usr/share/doc/postgresql-{POSTGRESQL}/copyright)",
        "catalogues": [path.name for path in paths],
        "messages_read": read,
        "messages_distinct": len(pairs),
        "bleu": baselines(str(out)),
    }
    (out / "dataset_info.json").write_text(json.dumps({**info, **extra}, indent=1) + "\n")


def prepare() -> str:
    """Directory of the text files, records, SentencePiece model and dataset_info.json, built
    once into the cache."""
    return build_once(NAME, _write)
