"""Bounds a run whose tf.data service dispatcher stopped answering.

TensorFlow's client retries an absent dispatcher for ever inside a train step, where neither
SIGTERM nor Python code in the main thread can run. A thread probes the dispatcher instead and,
after `timeout_s` without an answer, says so in one line and ends the process (exit 1); the
checkpoints already saved are complete (saves are atomic), so a rerun resumes from the last.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable

from models.core.errors import UsageError
from models.core.ports import check_reachable, split_address

EXIT_CODE = 1


class DispatcherWatch:
    """Daemon thread: probe HOST:PORT every `interval_s`; give up after `timeout_s` of silence."""

    def __init__(
        self,
        address: str,
        timeout_s: float,
        on_give_up: Callable[[], None] = lambda: None,
        interval_s: float = 2.0,
    ):
        self.host, self.port = split_address(address, "--tf_data_service")
        self.address = address
        self.timeout_s, self.interval_s, self.on_give_up = timeout_s, interval_s, on_give_up
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="dispatcher-watch", daemon=True)

    def __enter__(self) -> DispatcherWatch:
        if self.timeout_s > 0:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()

    def _answers(self) -> bool:
        try:
            check_reachable(self.host, self.port, self.address, timeout_s=self.interval_s)
            return True
        except UsageError:
            return False

    def _watch(self) -> None:
        silent_since = None
        while not self._stop.wait(self.interval_s):
            if self._answers():
                silent_since = None
                continue
            silent_since = silent_since or time.monotonic()
            if time.monotonic() - silent_since >= self.timeout_s and not self._stop.is_set():
                self._give_up()

    def _give_up(self) -> None:
        try:
            self.on_give_up()
        finally:
            print(
                f"error: the tf.data service dispatcher at {self.address} has not answered for "
                f"{self.timeout_s:g} s; the last checkpoint is kept, rerun to resume when it is "
                "back",
                file=sys.stderr,
                flush=True,
            )
            os._exit(EXIT_CODE)  # the main thread is stuck inside TensorFlow's retry loop
