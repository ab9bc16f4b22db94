"""Embedded offline datasets, written once into a local cache (builtin/cache.py) in the real
datasets' schemas: the catalogue of their names."""

from __future__ import annotations

from collections.abc import Callable

from models.core.errors import UsageError, nearest


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


def _spoken_wordnet() -> str:
    """Prepares WordNet's example sentences spoken by espeak-ng in many voices as speech
    records (Debian's wordnet-base and espeak-ng; imported lazily: synthesis pulls in scipy and
    soundfile, converting it TensorFlow)."""
    from models.data.builtin import spoken_wordnet

    return spoken_wordnet.prepare()


def _cmu_recordings() -> str:
    """Prepares CMU Sphinx's 12 transcribed recordings of human speech as a speech test set
    (Debian's pocketsphinx-testdata; imported lazily: converting it pulls in TensorFlow)."""
    from models.data.builtin import cmu_recordings

    return cmu_recordings.prepare()


BUILTINS: dict[str, Callable[[], str]] = {
    "digits": _digits,
    "digit_scenes": _digit_scenes,
    "digit_scenes_voc": _digit_scenes_voc,
    "python_docs": _python_docs,
    "wordnet_glosses": _wordnet_glosses,
    "wordnet_qa": _wordnet_qa,
    "pg_messages": _pg_messages,
    "spoken_wordnet": _spoken_wordnet,
    "cmu_recordings": _cmu_recordings,
}


def prepare(name: str) -> str:
    """Directory of the built-in dataset `name`, written into the cache on first use."""
    if name not in BUILTINS:
        raise UsageError(
            f"unknown built-in dataset '{name}'{nearest(name, BUILTINS)}; "
            f"known: {', '.join(sorted(BUILTINS))}"
        )
    return BUILTINS[name]()
