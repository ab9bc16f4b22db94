"""`python -m models --list [PATTERN] [--family=NAME]`: the registered variants with their
native and minimum input size, task, description, default recipe and the recipes whose
`run.model` names them. The default recipe is the family's default.gin if it trains the
variant, else its first recipe by name. A recipe NAME is `--gin_file=<family>/NAME.gin`.

PATTERN is an fnmatch wildcard over variant names ('resnet*', '*_v3*'); quote it in a shell.
"""

from __future__ import annotations

import argparse
import sys

from models.core.errors import UsageError, nearest, run_guarded
from models.core.registry import ModelEntry, list_models, model_entry

RECIPE_NOTE = (
    "recipe 'default' (configs/<family>/default.gin, what `python -m models.<family>` trains): "
    "a small variant on built-in data, to its target in a few CPU minutes (classifiers: the "
    "built-in handwritten digits, 32x32, 97% top-1; detectors: the digit scenes; DeepLab: "
    "their class masks; BERT: python_docs); the other recipes: the published Cloud TPU setups "
    "on the real datasets (--data_dir)"
)


class _Parser(argparse.ArgumentParser):
    """argparse whose errors are UsageError: one line `error: ...`, exit 2."""

    def error(self, message: str):
        raise UsageError(message)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m models",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--list",
        nargs="?",
        const="*",
        metavar="PATTERN",
        help="list the variants whose name matches PATTERN (default: all)",
    )
    parser.add_argument("--family", help="list only this family's variants, e.g. mobilenet")
    return parser


def _recipes(entry: ModelEntry) -> str:
    """'; default: D; recipes: A, B', named as under configs/<family>/ ('-' for none)."""

    def short(recipe: str | None) -> str:
        return "-" if recipe is None else recipe.removeprefix(f"{entry.family}/")

    recipes = ", ".join(map(short, entry.recipes)) or "-"
    return f"; default: {short(entry.default_recipe)}; recipes: {recipes}"


def selected(pattern: str, family: str | None) -> list[str]:
    """The variants --list shows; UsageError for an unknown family or no match."""
    if family is not None:
        families = {model_entry(name).family for name in list_models()}
        if family not in families:
            raise UsageError(f"--family={family}: no such family{nearest(family, families)}")
    names = list_models(family, pattern)
    if not names:
        where = f" in family {family}" if family else ""
        raise UsageError(f"no registered model matches '{pattern}'{where}")
    return names


def table(names: list[str]) -> list[str]:
    """One aligned line per variant, under a header."""
    rows = [("model", "family", "input", "min", "task", "description, default recipe, recipes")]
    for name in names:
        entry = model_entry(name)
        image = entry.image_size is not None
        size, smallest = (str(entry.image_size), str(entry.min_image_size)) if image else ("-", "-")
        about = entry.description + _recipes(entry)
        tasks = ", ".join((entry.task, *entry.other_tasks))
        rows.append((name, entry.family, size, smallest, tasks, about))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return [
        "  ".join([*(c.ljust(w) for c, w in zip(row[:-1], widths, strict=True)), row[-1]])
        for row in rows
    ]


def run(argv: list[str] | None = None) -> int:
    """Prints the listing (or the help when neither --list nor --family is given)."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.list is None and args.family is None:
        parser.print_help()
        return 0
    print("\n".join(table(selected(args.list or "*", args.family))))
    print(f"\n{RECIPE_NOTE}")
    return 0


if __name__ == "__main__":
    run_guarded(lambda: sys.exit(run()))
