"""A progress line at least every 30 s while a run would otherwise be silent: inside a long
traced training loop (step, examples/s, time left) or a long evaluation (batches done)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

EVERY_S = 30.0


class ProgressTicker:
    """A thread that prints `status()` when `every_s` seconds have passed since the last line
    the run printed (`touch()` marks one). Use as a context manager around the run's work."""

    def __init__(self, status: Callable[[], str | None], every_s: float = EVERY_S):
        self.status, self.every_s = status, every_s
        self._last = time.monotonic()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="progress", daemon=True)

    def __enter__(self) -> ProgressTicker:
        self._last = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join()

    def touch(self) -> None:
        """The run printed a line of its own: the next tick is `every_s` from now."""
        self._last = time.monotonic()

    def _run(self) -> None:
        while not self._done.wait(max(self._last + self.every_s - time.monotonic(), 0.05)):
            if time.monotonic() - self._last < self.every_s:
                continue
            line = self.status()
            if line:
                print(line, flush=True)
            self.touch()


class TrainingPace:
    """`step N/T | E examples/s | about M min left` from a step counter read between ticks."""

    def __init__(self, read_step: Callable[[], int], total_steps: int, global_batch_size: int):
        self.read_step, self.total, self.batch = read_step, total_steps, global_batch_size
        self._mark = (time.monotonic(), read_step())

    def __call__(self) -> str:
        now, step = time.monotonic(), self.read_step()
        then, before = self._mark
        self._mark = (now, step)
        if step <= before:
            return f"step {step}/{self.total}"
        per_second = (step - before) / (now - then)
        left = (self.total - step) / per_second
        return (
            f"step {step}/{self.total} | {per_second * self.batch:.0f} examples/s | "
            f"about {_duration(left)} left"
        )


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
