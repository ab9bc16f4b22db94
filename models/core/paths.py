"""Where the recipes live, for every kind of install.

A source checkout or an editable install reads `configs/` and `official/` at the repository
root. A wheel or a non-editable `pip install .` carries them as package data under
`models/_data/` (see setup.py); `official/` is data only, never the importable `official`
package, which is Model Garden's.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent.parent  # models/
_SOURCE_ROOT = _PACKAGE.parent
_PACKAGE_DATA = _PACKAGE / "_data"


def _data_dir(name: str) -> Path:
    """The source tree's `name`/ when this module runs from a checkout (its root holds
    setup.py; site-packages holds unrelated top-level folders, e.g. Model Garden's
    `official`), else the copy installed as package data."""
    if (_SOURCE_ROOT / "setup.py").is_file() and (_SOURCE_ROOT / name).is_dir():
        return _SOURCE_ROOT / name
    return _PACKAGE_DATA / name


CONFIGS_DIR = _data_dir("configs")  # gin recipes: configs/<family>/*.gin, configs/slices/*.gin
OFFICIAL_DIR = _data_dir("official")  # reproduction recipes of published results + README.md
