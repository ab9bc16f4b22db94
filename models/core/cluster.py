"""Multi-worker clusters on TensorFlow's own runtime: TF_CONFIG checks, a bounded wait for
the other workers, and MultiWorkerMirroredStrategy.

The cluster comes from the TF_CONFIG variable, or from --worker_hosts/--task_index, which
write it. Every check fails with one line instead of a traceback or an endless gRPC wait.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from dataclasses import dataclass

import tensorflow as tf

from models.core.errors import UsageError
from models.core.ports import check_port_free, split_address

ROLES = ("chief", "worker")
_LOCAL_HOSTS = {"localhost", "127.0.0.1", "0.0.0.0", "::1", socket.gethostname()}


@dataclass(frozen=True)
class Cluster:
    """This process's place in the cluster, as TF_CONFIG describes it."""

    jobs: dict[str, list[str]]
    role: str
    index: int

    @property
    def address(self) -> str:
        return self.jobs[self.role][self.index]

    @property
    def size(self) -> int:
        return sum(len(hosts) for hosts in self.jobs.values())


def write_tf_config(worker_hosts: list[str], task_index: int) -> None:
    """--worker_hosts/--task_index -> TF_CONFIG (worker 0 is the chief)."""
    config = {
        "cluster": {"worker": list(worker_hosts)},
        "task": {"type": "worker", "index": task_index},
    }
    os.environ["TF_CONFIG"] = json.dumps(config)


def _address_error(address: object) -> str | None:
    if not isinstance(address, str):
        return f"'{address}' is not HOST:PORT"
    try:
        split_address(address, f"'{address}'")
    except UsageError as error:
        return str(error)
    return None


def parse_tf_config(raw: str | None) -> Cluster:
    """The validated cluster of a TF_CONFIG value; UsageError naming what is wrong."""
    if not raw:
        raise UsageError("--strategy=multi_worker needs the cluster in the TF_CONFIG variable")
    try:
        config = json.loads(raw)
        jobs, task = config["cluster"], config["task"]
        role, index = task["type"], task["index"]
    except (ValueError, KeyError, TypeError) as error:
        raise UsageError(f"TF_CONFIG is malformed: {type(error).__name__}: {error}") from None
    unknown = set(jobs) - set(ROLES)
    if unknown or not jobs.get("worker") and not jobs.get("chief"):
        raise UsageError(f"TF_CONFIG cluster must list chief/worker hosts, got {sorted(jobs)}")
    for hosts in jobs.values():
        if not isinstance(hosts, list):
            raise UsageError(f"TF_CONFIG is malformed: {hosts}")
        problem = next(filter(None, map(_address_error, hosts)), None)
        if problem:
            raise UsageError(f"TF_CONFIG is malformed: {problem}")
    if role not in jobs or not isinstance(index, int) or not 0 <= index < len(jobs[role]):
        raise UsageError(f"TF_CONFIG task {role}:{index} is not in the cluster {jobs}")
    return Cluster(jobs, role, index)


def check_own_port(cluster: Cluster) -> None:
    """This worker's port must be free on this host (else gRPC fails late and obscurely)."""
    host, port = split_address(cluster.address, f"{cluster.role} {cluster.index}")
    if host in _LOCAL_HOSTS:
        check_port_free(port, f"{cluster.role} {cluster.index} ({cluster.address})")


# Runs in a helper process: TensorFlow holds the GIL while it waits for the other workers, so no
# thread of the waiting process can act. argv: pid, timeout_s, message. Closing stdin disarms.
_WATCHDOG = """
import os, select, signal, sys
pid, timeout, message = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
if not select.select([sys.stdin], [], [], timeout)[0]:
    print(message, file=sys.stderr, flush=True)
    os.kill(pid, signal.SIGKILL)
"""


class StartupWatchdog:
    """Ends this process (SIGKILL, after one line on stderr) when the cluster is not up within
    timeout_s; a helper process does it, since TensorFlow's wait blocks every thread here."""

    def __init__(self, cluster: Cluster, timeout_s: float):
        self.timeout_s = timeout_s
        self.message = (
            f"error: the cluster of {cluster.size} tasks did not come up within {timeout_s:g} s "
            f"({cluster.role} {cluster.index} at {cluster.address} waited for the others; "
            "check that every worker was started with the same TF_CONFIG cluster)"
        )
        self._watcher: subprocess.Popen | None = None

    def __enter__(self) -> StartupWatchdog:
        args = [sys.executable, "-c", _WATCHDOG, str(os.getpid()), str(self.timeout_s)]
        self._watcher = subprocess.Popen([*args, self.message], stdin=subprocess.PIPE)
        return self

    def __exit__(self, *exc) -> None:
        self._watcher.stdin.close()  # disarm: the watcher sees end-of-file and exits
        self._watcher.wait()


def multi_worker_strategy(timeout_s: float) -> tf.distribute.MultiWorkerMirroredStrategy:
    """MultiWorkerMirroredStrategy over the TF_CONFIG cluster, once every worker answered."""
    cluster = parse_tf_config(os.environ.get("TF_CONFIG"))
    check_own_port(cluster)
    with StartupWatchdog(cluster, timeout_s):
        strategy = tf.distribute.MultiWorkerMirroredStrategy()
        ones = strategy.run(lambda: tf.ones([]))  # a barrier: returns when all are up
        strategy.reduce(tf.distribute.ReduceOp.SUM, ones, axis=None).numpy()
    return strategy


def is_chief(strategy: tf.distribute.Strategy) -> bool:
    """True outside clusters, for the chief, and for worker 0 of a chief-less cluster."""
    resolver = getattr(strategy, "cluster_resolver", None)
    task_type = getattr(resolver, "task_type", None)
    return task_type in (None, "chief") or (task_type == "worker" and resolver.task_id == 0)


def is_multi_worker(strategy: tf.distribute.Strategy) -> bool:
    return isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy) and bool(
        strategy.cluster_resolver.cluster_spec().jobs
    )
