"""One training run per model_dir: a second live run on the same directory is refused with one
line (two runs would interleave checkpoints and records); a lock a killed run left behind is
taken over."""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator

import tensorflow as tf

from models.core.errors import UsageError, first_line

LOCK_NAME = "run.lock"


@contextlib.contextmanager
def model_dir_lock(model_dir: str, enabled: bool = True) -> Iterator[None]:
    """Holds model_dir/run.lock (host and pid of this process) for the block. Writing it is
    also the first write to model_dir, so an unwritable directory fails here, in one line."""
    if not enabled:
        yield
        return
    path = f"{model_dir.rstrip('/')}/{LOCK_NAME}"
    _take(path, model_dir)
    try:
        yield
    finally:
        if _holder(path) == _me():
            with contextlib.suppress(tf.errors.OpError, OSError):
                tf.io.gfile.remove(path)


def _me() -> tuple[str, int]:
    return socket.gethostname(), os.getpid()


def _holder(path: str) -> tuple[str, int] | None:
    """(host, pid) written in the lock file, or None when there is none or it is unreadable."""
    try:
        host, pid = tf.io.gfile.GFile(path).read().split()
        return host, int(pid)
    except (tf.errors.OpError, OSError, ValueError):
        return None


def _alive(host: str, pid: int) -> bool:
    """Whether (host, pid) may still be running: a Python process of this host that exists
    (another host's process cannot be checked, so it counts as alive; a damaged lock's pid
    may name a kernel thread or a shell, which is no run)."""
    if host != socket.gethostname():
        return True
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as command:
            return b"python" in command.read().lower()
    except OSError:  # no /proc (macOS): an existing process counts as alive
        return True


def _take(path: str, model_dir: str) -> None:
    """Creates the lock (atomically on a local disk), taking over a dead run's."""
    for attempt in range(2):
        holder = _holder(path)
        if holder is not None and _alive(*holder):
            host, pid = holder
            raise UsageError(
                f"--model_dir={model_dir} is in use by another run (pid {pid} on {host}); wait "
                f"for it to end or use another --model_dir (if that run is gone, delete {path})"
            )
        if holder is not None or attempt:
            with contextlib.suppress(tf.errors.NotFoundError, FileNotFoundError):
                tf.io.gfile.remove(path)
        try:
            _create(path, "{} {}\n".format(*_me()))
            return
        except FileExistsError:
            continue  # another run created it in between: check it again
        except (tf.errors.OpError, OSError) as error:
            reason = getattr(error, "strerror", None) or first_line(error)
            raise UsageError(f"--model_dir={model_dir}: cannot write to it: {reason}") from None
    raise UsageError(f"--model_dir={model_dir} is in use by another run (it holds {path})")


def _create(path: str, text: str) -> None:
    """Writes a new file; FileExistsError when it exists (only checked on a local disk)."""
    if "://" in path:
        with tf.io.gfile.GFile(path, "w") as lock:
            lock.write(text)
        return
    descriptor = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    with os.fdopen(descriptor, "w") as lock:
        lock.write(text)
