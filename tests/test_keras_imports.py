"""The project uses tf_keras (Keras 2) only: Keras 3 objects cannot mix with Model Garden's."""

import re

from zoo_testing import REPO

FORBIDDEN = re.compile(r"(^|[^_\w])tf\.keras\b|^\s*import keras\b|^\s*from keras\b", re.M)


def test_no_keras3_anywhere():
    offenders = []
    for path in REPO.rglob("*.py"):
        if ".venv" in path.parts or path.name == "test_keras_imports.py":
            continue
        if FORBIDDEN.search(path.read_text()):
            offenders.append(str(path.relative_to(REPO)))
    assert offenders == []


def test_pattern_catches_keras3():
    assert FORBIDDEN.search("x = tf." + "keras.layers.Dense(3)")
    assert FORBIDDEN.search("import keras\n")
    assert not FORBIDDEN.search("import tf_keras\nlayer = tf_keras.layers.Dense(3)")
