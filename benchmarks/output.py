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


def run_cli(
    name: str,
    compute: Callable[[list[str]], dict],
    render: Callable[[dict], str],
    arg: str = "",
    exit_code: Callable[[dict], int] | None = None,
) -> None:
    """absl app for `python -m benchmarks.<name> [ARG]`: emit(compute(args)); bad input -> one
    line and exit code 2. `arg` names the one positional argument, or "" for none;
    `exit_code(result)`, after the result is printed, is the command's exit code (default 0)."""
    from models.core.errors import UsageError, run_app

    def main(argv: list[str]) -> int:
        if len(argv) != (2 if arg else 1):
            raise UsageError(f"usage: python -m benchmarks.{name} {arg} [flags]".replace("  ", " "))
        result = compute(argv[1:])
        emit(result, flags.FLAGS.json, render)
        return exit_code(result) if exit_code else 0

    define_json_flag()
    run_app(main)


def format_number(value: float | None, spec: str | None = None) -> str:
    """'-' for None; else `format(value, spec)`, or without a spec three significant figures
    (whole numbers from 100 up), with thousands separators."""
    if value is None:
        return "-"
    if spec is not None:
        return format(value, spec)
    return f"{value:,.3g}" if abs(value) < 100 else f"{value:,.0f}"


def progress(message: str) -> None:
    """Progress for people goes to stderr, so stdout stays one JSON object under --json."""
    print(message, file=sys.stderr, flush=True)
