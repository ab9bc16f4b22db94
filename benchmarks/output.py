"""Every benchmarks command prints a human table, or with --json exactly one JSON object."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable

from absl import flags


def define_json_flag() -> None:
    """--json: print exactly one JSON object on stdout (for scripts and dashboards)."""
    if "json" not in flags.FLAGS:
        flags.DEFINE_boolean("json", False, "Print exactly one JSON object on stdout.")


def emit(result: dict, as_json: bool, render: Callable[[dict], str]) -> None:
    """Prints `result` as one JSON object, or as the text `render(result)` returns."""
    if as_json:
        sys.stdout.write(json.dumps(result, sort_keys=True, default=float) + "\n")
    else:
        sys.stdout.write(render(result).rstrip("\n") + "\n")
    sys.stdout.flush()


def progress(message: str) -> None:
    """Progress for people goes to stderr, so stdout stays one JSON object under --json."""
    print(message, file=sys.stderr, flush=True)
