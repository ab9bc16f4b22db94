"""User-facing errors: one clear line on stderr and exit code 2, never a traceback."""

from __future__ import annotations

import difflib
import re
import signal
import sys
from collections.abc import Callable, Iterable
from typing import NoReturn

USAGE_EXIT_CODE = 2
PREEMPTED_EXIT_CODE = 143  # SIGTERM: checkpoint saved, rerun to resume (128 + 15)
MAX_LINE = 1000  # an error line quotes the user's input: a 100 kB --gin_param is not echoed
# TensorFlow's lines before the op's own message in errors raised by a graph or tf.function.
TF_PREAMBLE = re.compile(
    r"(Graph execution error:|Detected at node|<stack traces unavailable>|"
    r"Error in user-defined function|File \"|\[\[)"
)
# ...and the decorations around an eager op's message.
OP_DECORATION = re.compile(r"^\s*\{\{function_node [^}]*\}\}|\s*\[Op:[^\]]*\]\s*$")
# gin appends "In call to configurable 'x' (<function x at 0x...>)" to errors raised inside one.
GIN_CALL_CONTEXT = re.compile(r"\s*In call to configurable '[^']*' \(<[^>]*>\)")


class UsageError(Exception):
    """Bad input from the user (flags, gin, data, cluster config)."""


def check_choice(value: object, choices: Iterable[object], owner: str) -> object:
    """`value` if it is one of `choices`, else a UsageError naming `owner` (the gin setting)."""
    choices = tuple(choices)
    if value not in choices:
        shown = [str(choice) for choice in choices]
        hint = nearest(str(value), shown)
        raise UsageError(f"{owner} = {value!r}: use one of {', '.join(shown)}{hint}")
    return value


def nearest(name: str, candidates: Iterable[str]) -> str:
    """Returns ' (did you mean X?)' for the closest candidate, or ''."""
    match = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.5)
    return f" (did you mean '{match[0]}'?)" if match else ""


def fail(message: str) -> NoReturn:
    """Prints one line (at most MAX_LINE characters of it) and exits with the usage exit code."""
    line = " ".join(GIN_CALL_CONTEXT.sub("", str(message)).split())
    if len(line) > MAX_LINE:  # keep the start (what) and the end (what to do)
        head, tail = line[: MAX_LINE * 2 // 3], line[-(MAX_LINE // 3 - 40) :]
        line = f"{head} ...({len(line) - len(head) - len(tail)} characters cut)... {tail}"
    print(f"error: {line}", file=sys.stderr, flush=True)
    sys.exit(USAGE_EXIT_CODE)


def first_line(error: Exception) -> str:
    """The first telling line of an error's message (TensorFlow's `.message`, without its
    'Graph execution error:' / 'Detected at node' preamble), else its type's name."""
    text = (getattr(error, "message", None) or str(error)).strip()
    lines = [OP_DECORATION.sub("", line).strip() for line in text.splitlines()]
    lines = [line for line in lines if line]
    telling = [line for line in lines if not TF_PREAMBLE.match(line)]
    return (telling or lines or [type(error).__name__])[0]


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
    if isinstance(error, tf.errors.InvalidArgumentError) and _is_decode_error(text):
        return f"an image in the records cannot be decoded: {first}"
    return None


def _is_decode_error(text: str) -> bool:
    lowered = text.lower()
    return any(word in lowered for word in ("decode", "jpeg", "png", "image"))


def resource_error_message(error: BaseException) -> str | None:
    """Maps the I/O and resource errors a user's machine causes (permissions, a full disk, a
    missing file, memory) to one sentence naming the file, if it is one."""
    import tensorflow as tf

    if isinstance(error, OSError):
        where = f": {error.filename}" if error.filename else ""
        reason = error.strerror or first_line(error)
        return f"{reason.lower()}{where}"
    kinds = {
        tf.errors.PermissionDeniedError: "permission denied",
        tf.errors.ResourceExhaustedError: "out of resources (disk space or memory)",
        tf.errors.NotFoundError: "not found",
    }
    for kind, what in kinds.items():
        if isinstance(error, kind):
            return f"{what}: {first_line(error)}"
    text = first_line(error)
    if isinstance(error, tf.errors.OpError) and "No space left on device" in text:
        return f"no space left on device: {text}"
    return None


def gin_value_message(error: BaseException) -> str | None:
    """A TypeError raised inside a gin configurable (gin adds its call context): a binding
    of the wrong type, e.g. `learning_rate.base_lr = 'high'`."""
    text = str(error)
    match = GIN_CALL_CONTEXT.search(text)
    if not isinstance(error, TypeError) or match is None:
        return None
    name = re.search(r"'([^']*)'", match.group(0)).group(1)
    return f"a gin value of {name} has the wrong type: {first_line(error)}"


class Stopped(BaseException):
    """SIGTERM or SIGINT stopped a run that had nothing to save; `what` says so."""

    NOTHING_SAVED = "stopped before any training step; nothing was saved"

    def __init__(self, signum: int, what: str = NOTHING_SAVED):
        super().__init__(signum)
        self.signum, self.what = signum, what


def stop_on_signals() -> None:
    """Until training takes them over, SIGTERM and Ctrl-C stop the program with one line
    (instead of a silent exit 143 or a KeyboardInterrupt traceback)."""

    def stop(signum, frame):
        raise Stopped(signum)

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, stop)


def exit_on_signals(what: str) -> None:
    """Until replaced, SIGTERM and Ctrl-C print `SIGTERM: <what>` and exit 128 + signal; for
    start-up, where no exception boundary is in place yet."""
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda number, frame: _stopped(number, what))


def _stopped(signum: int, what: str) -> NoReturn:
    name = signal.Signals(signum).name
    print(f"{name}: {what}", file=sys.stderr, flush=True)
    sys.exit(128 + signum)


def run_app(main: Callable[[list[str]], object]) -> None:
    """absl `app.run(main)` where flag errors, UsageError and bad data print one line, exit 2;
    C libraries' noise is kept off the terminal (models/core/stderr_filter.py)."""
    from absl import app, flags

    from models.core.stderr_filter import filter_c_stderr

    filter_c_stderr()

    def parse(argv: list[str]) -> list[str]:
        try:
            return flags.FLAGS(argv)
        except flags.Error as error:
            fail(str(error))

    run_guarded(lambda: app.run(main, flags_parser=parse))


def require_flags(argv: list[str], *names: str) -> None:
    """UsageError for positional arguments left after the flags, or a required flag unset."""
    from absl import flags

    if len(argv) > 1:
        raise UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
    for name in names:
        if not flags.FLAGS[name].value:
            raise UsageError(f"--{name} is required")


def run_guarded(main: Callable[[], object]) -> None:
    """Runs `main`: UsageError, bad data, I/O and resource errors and wrong-typed gin values
    become one line with exit code 2; a signal before training, one line and 128 + signal."""
    try:
        main()
    except UsageError as error:
        fail(str(error))
    except Stopped as stop:
        _stopped(stop.signum, stop.what)
    except KeyboardInterrupt:
        _stopped(signal.SIGINT, "interrupted; nothing was saved")
    except Exception as error:  # noqa: BLE001 - only users' errors are rewritten; others re-raise
        for explain in (data_error_message, resource_error_message, gin_value_message):
            message = explain(error)
            if message is not None:
                fail(message)
        raise
