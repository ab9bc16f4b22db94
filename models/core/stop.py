"""A stop flag that SIGTERM and Ctrl-C set at once: traced training loops read it between
steps, evaluations between batches, so a run stops within seconds however long its loop.

Python runs its signal handlers only when the main thread is back in Python, which a traced
loop of many steps is not. So the flag is set by a thread that wakes on the signal (through
signal.set_wakeup_fd) and assigns a host variable the loop's condition reads."""

from __future__ import annotations

import signal
import socket
import threading

import tensorflow as tf

SIGNALS = (signal.SIGTERM, signal.SIGINT)


class StopRequested(Exception):
    """The stop flag was seen between steps or batches; `signum` says which signal set it."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


class StopFlag:
    """One per process (`StopFlag.install()`): SIGTERM/SIGINT set `signum` and `variable`."""

    _instance: StopFlag | None = None

    def __init__(self):
        with tf.init_scope(), tf.device("/cpu:0"):
            self.variable = tf.Variable(False, trainable=False, name="stop_requested")
        self.signum: int | None = None
        self._reader, writer = socket.socketpair()
        writer.setblocking(False)
        self._writer = writer  # kept open: the wakeup fd must outlive the handlers
        signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
        threading.Thread(target=self._watch, name="stop-flag", daemon=True).start()

    @classmethod
    def install(cls) -> StopFlag:
        """The process's flag, cleared, with SIGTERM and SIGINT handled by it (main thread)."""
        if cls._instance is None:
            cls._instance = cls()
        flag = cls._instance
        flag.signum = None
        flag.variable.assign(False)
        for signum in SIGNALS:
            signal.signal(signum, flag._on_signal)
        return flag

    @property
    def requested(self) -> bool:
        return self.signum is not None

    def check(self) -> None:
        """Raises StopRequested once a signal has set the flag."""
        if self.signum is not None:
            raise StopRequested(self.signum)

    def _on_signal(self, signum: int, frame) -> None:
        """Python's handler: runs once the main thread is back in Python (the thread has
        usually set the flag by then)."""
        self._set(signum)

    def _set(self, signum: int) -> None:
        if self.signum is None:
            self.signum = signum
        self.variable.assign(True)

    def _watch(self) -> None:
        """Sets the flag the moment a handled SIGTERM or SIGINT arrives."""
        while True:
            for number in self._reader.recv(64):
                if number in SIGNALS and signal.getsignal(number) == self._on_signal:
                    self._set(number)
