"""The Makefile's `pytest -n 2 --dist loadgroup` runs tests that share an xdist_group on one
worker, one after the other: the ResNet runs that share one trained run rely on it (tests/resnet).
pytest 9.2 with pytest-xdist 3.8 drops the groups silently (pytest-dev/pytest-xdist#1386)."""

from __future__ import annotations

import subprocess
import sys

GROUPED = """
import os
import pytest

@pytest.mark.xdist_group("together")
@pytest.mark.parametrize("name", ["first", "second"])
def test_grouped(name):
    print(f"ran {name} on {os.environ['PYTEST_XDIST_WORKER']}")

@pytest.mark.parametrize("name", ["third", "fourth"])
def test_alone(name):
    print(f"ran {name} on {os.environ['PYTEST_XDIST_WORKER']}")
"""


def test_loadgroup_runs_a_group_on_one_worker(tmp_path):
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    args = ["-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup", "-rP", "-q"]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", *args, "test_grouped.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-2000:]
    workers = dict(
        line.split()[1::2] for line in result.stdout.splitlines() if line.startswith("ran ")
    )
    assert len(workers) == 4, result.stdout[-2000:]
    assert workers["first"] == workers["second"], f"the group was split: {workers}"
