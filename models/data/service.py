"""A tf.data service on loopback (dispatcher + N workers in one process), for users without one.

Usage: python -m models.data.service --port=P [--workers=2]     (--port=0 picks a free port)

It prints `tf.data service: grpc://localhost:P (dispatcher) with N worker(s); stop with
Ctrl-C` and serves until SIGINT/SIGTERM. Point a pipeline at that address with
`dataset.apply(tf.data.experimental.service.distribute(processing_mode, service=address))`.
TF's servers listen on every interface; this tool is meant for one trusted host.

The processing mode is the sharding policy:
  - "parallel_epochs": every service worker runs the whole input pipeline, so each epoch
    of the source is produced once per worker (N workers -> each element N times, in no
    fixed order). Use it when the source is shuffled, random or infinite.
  - "distributed_epoch": the dispatcher splits the source (files, ranges) among the
    workers, so one epoch yields each element exactly once overall (at most once if a
    worker fails). Use it for exact epochs over finite, splittable sources.
"""

from __future__ import annotations

import os
import signal
import threading

from models.core.errors import UsageError
from models.core.ports import check_port_free


def start_local_service(port: int, workers: int = 2) -> tuple[str, list]:
    """Starts a dispatcher on `port` (0: a free one) and `workers` workers in this process.

    Returns the dispatcher's address ("grpc://localhost:P") and the servers, dispatcher
    first; keep them referenced while in use and `stop()` them when done.
    """
    if workers < 1:
        raise UsageError(f"--workers must be at least 1, got {workers}")
    if port:
        check_port_free(port)
    import tensorflow as tf  # after the port check: a busy port fails fast, without TF

    service = tf.data.experimental.service
    dispatcher = service.DispatchServer(service.DispatcherConfig(port=port))
    host_port = dispatcher.target.split("://", 1)[1]
    servers = [dispatcher] + [
        service.WorkerServer(service.WorkerConfig(dispatcher_address=host_port))
        for _ in range(workers)
    ]
    return dispatcher.target, servers


def stop_servers(servers: list) -> None:
    """Stops the workers, then the dispatcher (in-process users; may wait for busy workers)."""
    for server in reversed(servers):
        server.stop()


def serve(port: int, workers: int) -> None:
    """Starts the service, prints its address, and blocks until SIGINT or SIGTERM."""
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    address, _servers = start_local_service(port, workers)
    print(
        f"tf.data service: {address} (dispatcher) with {workers} worker(s); stop with Ctrl-C",
        flush=True,
    )
    while not stop.wait(0.5):
        pass
    print("tf.data service stopped", flush=True)
    # Not server.stop(): a worker still serving an endless training job blocks in it (holding
    # the GIL); the servers keep no state on disk, so ending the process is the clean stop.
    os._exit(0)


def main() -> None:
    """`python -m models.data.service`: bad input prints one line and exits 2."""
    from absl import flags

    from models.core.errors import run_app

    flags.DEFINE_integer("port", None, "Dispatcher port on loopback; 0 picks a free one.")
    flags.DEFINE_integer("workers", 2, "Number of tf.data service workers to start.")

    def run(argv: list[str]) -> None:
        if len(argv) > 1:
            raise UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
        port = flags.FLAGS.port
        if port is None:
            raise UsageError("--port is required (use --port=0 for a free port)")
        if not 0 <= port < 65536:
            raise UsageError(f"--port must be 0..65535, got {port}")
        serve(port, flags.FLAGS.workers)

    run_app(run)


if __name__ == "__main__":
    main()
