"""Starts N copies of a command on this host as a multi-worker TF cluster on loopback.

Usage: python -m models.launch --workers=N [--ports=P0,P1,...] [--startup_timeout_s=S]
           [--grace_s=G] -- CMD ARGS...

Each worker i runs CMD ARGS (passed through untouched) with its own TF_CONFIG:
  {"cluster": {"worker": ["localhost:P0", ...]}, "task": {"type": "worker", "index": i}}
on free loopback ports (or --ports), and PYTHONUNBUFFERED=1 so its output streams live.
Every line a worker prints is shown prefixed with "[worker i] " on the same stream.
If a worker fails (non-zero exit or killed by a signal), the others get SIGTERM, then
SIGKILL after --grace_s; the launcher exits with the worker's code (1 if it had none).
SIGINT/SIGTERM to the launcher are forwarded to every worker; it then exits 128+signal.

Example (two workers training ResNet on the built-in digits):
  python -m models.launch --workers=2 -- \\
      python -m models.resnet --model_dir=/tmp/mw --strategy=multi_worker
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from typing import TextIO

from models.core.errors import PREEMPTED_EXIT_CODE, UsageError
from models.core.ports import check_port_free, free_ports

POLL_S = 0.05
_PRINT_LOCK = threading.Lock()


def tf_config(ports: Sequence[int], index: int) -> str:
    """The TF_CONFIG JSON of worker `index` in a loopback cluster on `ports`."""
    cluster = {"worker": [f"localhost:{port}" for port in ports]}
    return json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}})


def describe_exit(code: int) -> str:
    """`code 3`, `code -9 (SIGKILL)` for a worker killed by a signal, or `code 143 (...)` for
    the trainer's preemption exit."""
    if code == PREEMPTED_EXIT_CODE:
        return f"code {code} (SIGTERM: checkpoint saved; rerun the same command to resume)"
    if code < 0:
        try:
            return f"code {code} ({signal.Signals(-code).name})"
        except ValueError:
            return f"code {code} (signal {-code})"
    return f"code {code}"


class Worker:
    """One worker subprocess, its own process group, and threads prefixing its output."""

    def __init__(self, index: int, command: Sequence[str], env: dict[str, str]) -> None:
        self.index = index
        self.started = time.monotonic()
        self.spoke = threading.Event()  # set on the first line on stdout or stderr
        self.process = subprocess.Popen(
            list(command),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            encoding="utf-8",
            errors="replace",
            start_new_session=True,  # only the launcher's forwarded signals reach it
        )
        self.threads = [
            threading.Thread(target=self._pump, args=(pipe, out), daemon=True)
            for pipe, out in ((self.process.stdout, sys.stdout), (self.process.stderr, sys.stderr))
        ]
        for thread in self.threads:
            thread.start()

    def _pump(self, pipe: TextIO, out: TextIO) -> None:
        prefix = f"[worker {self.index}] "
        for line in iter(pipe.readline, ""):
            self.spoke.set()
            with _PRINT_LOCK:
                out.write(prefix + line if line.endswith("\n") else f"{prefix}{line}\n")
                out.flush()
        pipe.close()

    def poll(self) -> int | None:
        return self.process.poll()

    def signal(self, signum: int) -> None:
        """Sends `signum` to the worker's process group if the worker is still running."""
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signum)
            except ProcessLookupError:
                pass

    def join_output(self, timeout_s: float = 5.0) -> None:
        """Waits for the rest of its output (a leftover grandchild may hold a pipe open)."""
        deadline = time.monotonic() + timeout_s
        for thread in self.threads:
            thread.join(max(0.0, deadline - time.monotonic()))


def _say(message: str) -> None:
    with _PRINT_LOCK:
        print(message, file=sys.stderr, flush=True)


def stop_workers(workers: Sequence[Worker], signum: int, grace_s: float) -> None:
    """Sends `signum` to running workers, waits up to `grace_s`, then SIGKILLs the rest."""
    for worker in workers:
        worker.signal(signum)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(w.poll() is None for w in workers):
        time.sleep(POLL_S)
    left = [w for w in workers if w.poll() is None]
    if left:
        names = ", ".join(str(w.index) for w in left)
        _say(f"launch: worker(s) {names} still running after {grace_s:g} s; sending SIGKILL")
    for worker in left:
        worker.signal(signal.SIGKILL)
    for worker in workers:
        worker.process.wait()


class _Signals:
    """Records SIGINT/SIGTERM sent to the launcher (main thread only) for forwarding."""

    def __init__(self) -> None:
        self.received: int | None = None
        self._old: dict[int, object] = {}
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._old[signum] = signal.signal(signum, self._record)

    def _record(self, signum: int, frame: object) -> None:
        self.received = signum

    def restore(self) -> None:
        for signum, handler in self._old.items():
            signal.signal(signum, handler)


def _start_all(command: Sequence[str], ports: Sequence[int]) -> list[Worker]:
    workers: list[Worker] = []
    for index in range(len(ports)):
        env = dict(os.environ, TF_CONFIG=tf_config(ports, index))
        env.setdefault("PYTHONUNBUFFERED", "1")
        try:
            workers.append(Worker(index, command, env))
        except OSError as error:
            stop_workers(workers, signal.SIGKILL, 0)
            raise UsageError(f"cannot start worker command {command[0]!r}: {error}") from error
    return workers


def _first_failure(workers: Sequence[Worker], startup_timeout_s: float) -> tuple[str, int] | None:
    """(error line, exit code) for the first failed worker, or None while all are healthy."""
    now = time.monotonic()
    for worker in workers:
        code = worker.poll()
        if code not in (None, 0):
            others = any(w.poll() is None for w in workers if w is not worker)
            tail = "; stopping the other workers" if others else ""
            message = f"worker {worker.index} exited with {describe_exit(code)}{tail}"
            return message, code if code > 0 else 1
        late = startup_timeout_s > 0 and now - worker.started > startup_timeout_s
        if late and not worker.spoke.is_set():
            message = f"worker {worker.index} printed nothing within {startup_timeout_s:g} s"
            return f"{message} of starting; stopping all workers", 1
    return None


def _supervise(
    workers: list[Worker], signals: _Signals, startup_timeout_s: float
) -> tuple[str | None, int]:
    """Waits until all workers exit 0 -> (None, 0), or a failure/signal -> (message, code)."""
    while True:
        if signals.received is not None:
            name = signal.Signals(signals.received).name
            return f"launch: {name} received; forwarding it to the workers", signals.received
        failure = _first_failure(workers, startup_timeout_s)
        if failure is not None:
            return failure
        if all(w.poll() == 0 for w in workers):
            return None, 0
        time.sleep(POLL_S)


def run_workers(
    command: Sequence[str],
    workers: int,
    ports: Sequence[int] | None = None,
    startup_timeout_s: float = 0.0,
    grace_s: float = 30.0,
) -> int:
    """Runs `workers` copies of `command` as one loopback cluster; returns the exit code."""
    if not command:
        raise UsageError("missing worker command: python -m models.launch --workers=N -- CMD ARGS")
    if workers < 1:
        raise UsageError(f"--workers must be at least 1, got {workers}")
    if ports is None:
        ports = free_ports(workers)
    if len(ports) != workers:
        raise UsageError(f"{len(ports)} port(s) given for {workers} worker(s)")
    for port in ports:
        check_port_free(port)
    started: list[Worker] = []
    signals = _Signals()
    try:
        started.extend(_start_all(command, ports))
        message, code = _supervise(started, signals, startup_timeout_s)
        if message is None:
            return 0
        if signals.received is not None:
            _say(message)
            stop_workers(started, code, grace_s)
            return 128 + code
        _say(f"error: {message}")
        stop_workers(started, signal.SIGTERM, grace_s)
        return code
    finally:
        signals.restore()
        for worker in started:
            worker.join_output()


def _ports_from_flag(values: list[str] | None, workers: int | None) -> tuple[list[int] | None, int]:
    """--ports as ints and the worker count they imply (checked against --workers)."""
    if not values:
        if workers is None:
            raise UsageError("--workers is required, e.g. --workers=2")
        return None, workers
    try:
        ports = [int(value) for value in values]
    except ValueError as error:
        raise UsageError(f"--ports must be comma-separated integers, got {values}") from error
    bad = [p for p in ports if not 0 < p < 65536]
    if bad:
        raise UsageError(f"--ports: {bad[0]} is not a port number (1..65535)")
    if len(set(ports)) != len(ports):
        raise UsageError(f"--ports lists a port twice: {','.join(values)}")
    if workers is not None and workers != len(ports):
        raise UsageError(f"--ports has {len(ports)} port(s) but --workers={workers}")
    return ports, len(ports)


def define_flags() -> None:
    """The launcher's flags (only when run as a program, so importing it defines none)."""
    from absl import flags

    flags.DEFINE_integer("workers", None, "Number of worker processes to start.")
    flags.DEFINE_list("ports", None, "Fixed loopback ports, one per worker (default: free ones).")
    flags.DEFINE_float(
        "startup_timeout_s", 0.0, "Fail if a worker prints nothing within S seconds (0: off)."
    )
    flags.DEFINE_float("grace_s", 30.0, "Seconds between SIGTERM and SIGKILL when stopping.")


def main() -> None:
    """`python -m models.launch`: flag errors and bad input print one line and exit 2."""
    from absl import app, flags

    from models.core.errors import fail, run_guarded

    define_flags()

    def parse(argv: list[str]) -> list[str]:
        try:
            return flags.FLAGS(argv)
        except flags.Error as error:
            hint = "" if "--" in argv else " (put the worker command after '--')"
            fail(f"{error}{hint}")

    def run(argv: list[str]) -> None:
        f = flags.FLAGS
        ports, workers = _ports_from_flag(f.ports, f.workers)
        sys.exit(run_workers(argv[1:], workers, ports, f.startup_timeout_s, f.grace_s))

    run_guarded(lambda: app.run(run, flags_parser=parse))


if __name__ == "__main__":
    main()
