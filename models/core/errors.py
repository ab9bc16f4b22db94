"""User-facing errors: one clear line on stderr and exit code 2, never a traceback."""

from __future__ import annotations

import difflib
import re
import sys
from collections.abc import Callable, Iterable
from typing import NoReturn

USAGE_EXIT_CODE = 2
PREEMPTED_EXIT_CODE = 143  # SIGTERM: checkpoint saved, rerun to resume (128 + 15)
# gin appends "In call to configurable 'x' (<function x at 0x...>)" to errors raised inside one.
GIN_CALL_CONTEXT = re.compile(r"\s*In call to configurable '[^']*' \(<[^>]*>\)")


class UsageError(Exception):
    """Bad input from the user (flags, gin, data, cluster config)."""


def nearest(name: str, candidates: Iterable[str]) -> str:
    """Returns ' (did you mean X?)' for the closest candidate, or ''."""
    match = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.5)
    return f" (did you mean '{match[0]}'?)" if match else ""


def fail(message: str) -> NoReturn:
    """Prints one line and exits with the usage exit code."""
    line = " ".join(GIN_CALL_CONTEXT.sub("", str(message)).split())
    print(f"error: {line}", file=sys.stderr, flush=True)
    sys.exit(USAGE_EXIT_CODE)


def first_line(error: Exception) -> str:
    """The first line of an error's message (TensorFlow's `.message`), else its type's name."""
    text = (getattr(error, "message", None) or str(error)).strip()
    return text.splitlines()[0] if text else type(error).__name__


def data_error_message(error: Exception) -> str | None:
    """Maps a TensorFlow input-pipeline error to a user-facing sentence, if it is one."""
    import tensorflow as tf

    text = getattr(error, "message", None) or str(error)
    first = first_line(error)
    if isinstance(error, tf.errors.DataLossError):
        return f"corrupt or truncated TFRecord data: {first}"
    if "label out of range" in text:
        return "record label out of range for num_classes: " + first.split("label out of range")[-1]
    if isinstance(error, tf.errors.InvalidArgumentError) and (
        "Feature:" in text or "Key:" in text or "Name:" in text
    ):
        return f"records do not match the expected schema: {first}"
    if isinstance(error, tf.errors.InvalidArgumentError) and "decode" in text.lower():
        return f"an image in the records cannot be decoded: {first}"
    return None


def run_app(main: Callable[[list[str]], object]) -> None:
    """absl `app.run(main)` where flag errors, UsageError and bad data print one line, exit 2."""
    from absl import app, flags

    def parse(argv: list[str]) -> list[str]:
        try:
            return flags.FLAGS(argv)
        except flags.Error as error:
            fail(str(error))

    run_guarded(lambda: app.run(main, flags_parser=parse))


def run_guarded(main: Callable[[], object]) -> None:
    """Runs `main`, turning UsageError and bad-data errors into one line with exit code 2."""
    try:
        main()
    except UsageError as error:
        fail(str(error))
    except Exception as error:  # noqa: BLE001 - only data errors are rewritten; others re-raise
        message = data_error_message(error)
        if message is None:
            raise
        fail(message)
