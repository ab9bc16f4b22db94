"""`python -m models --list`: every registered model with its family's recipes."""

from __future__ import annotations

import argparse
import sys

from models.registry import list_models as _list_models
from models.registry import list_recipes, model_entry


def run(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m models", description=__doc__)
    parser.add_argument("--list", action="store_true", help="list models and recipes")
    args = parser.parse_args(argv)
    if not args.list:
        parser.print_help()
        return 0
    for name in _list_models():
        entry = model_entry(name)
        recipes = ", ".join(list_recipes(entry.family)) or "-"
        print(f"{name:<16} {entry.family:<12} recipes: {recipes}  {entry.description}")
    return 0


if __name__ == "__main__":
    sys.exit(run())
