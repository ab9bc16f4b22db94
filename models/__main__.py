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
    names = _list_models()
    width = max(map(len, names), default=0)
    families = {name: model_entry(name).family for name in names}
    family_width = max(map(len, families.values()), default=0)
    for name in names:
        entry = model_entry(name)
        recipes = ", ".join(list_recipes(entry.family)) or "-"
        columns = f"{name:<{width}}  {entry.family:<{family_width}}"
        print(f"{columns}  {entry.description}; recipes: {recipes}")
    return 0


if __name__ == "__main__":
    sys.exit(run())
