"""The project uses tf_keras (Keras 2) only: Keras 3 objects cannot mix with Model Garden's."""

import os
import re
from pathlib import Path

from zoo_testing import REPO

FORBIDDEN = re.compile(r"(^|[^_\w])tf\.keras\b|^\s*import keras\b|^\s*from keras\b", re.M)


def _project_sources() -> list[Path]:
    """The project's .py files; hidden folders (.venv, .git) and build outputs are not walked."""
    sources = []
    for folder, subfolders, files in os.walk(REPO):
        subfolders[:] = [d for d in subfolders if not d.startswith(".") and d != "build"]
        sources += [Path(folder, f) for f in files if f.endswith(".py")]
    return sources


def test_no_keras3_anywhere():
    offenders = []
    for path in _project_sources():
        if path.name == "test_keras_imports.py":
            continue
        if FORBIDDEN.search(path.read_text()):
            offenders.append(str(path.relative_to(REPO)))
    assert offenders == []


def test_project_sources_cover_models_and_tests():
    names = {str(p.relative_to(REPO)) for p in _project_sources()}
    assert "models/core/ema.py" in names and "tests/test_keras_imports.py" in names
    assert not any(n.startswith(".venv") for n in names)


def test_pattern_catches_keras3():
    assert FORBIDDEN.search("x = tf." + "keras.layers.Dense(3)")
    assert FORBIDDEN.search("import keras\n")
    assert not FORBIDDEN.search("import tf_keras\nlayer = tf_keras.layers.Dense(3)")
