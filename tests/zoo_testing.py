"""Paths and commands the tests share (imported by name; pytest puts tests/ on sys.path)."""

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
