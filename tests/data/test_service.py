"""The loopback tf.data service: its CLI, and what each processing mode yields in-process."""

from __future__ import annotations

import collections
import re
import signal
import socket
import subprocess

import pytest
import tensorflow as tf
from zoo_testing import PYTHON

from models.core.errors import UsageError
from models.data.service import start_local_service, stop_servers

ADDRESS_LINE = re.compile(
    r"tf\.data service: grpc://localhost:(\d+) \(dispatcher\) with 1 worker\(s\); stop with Ctrl-C"
)


@pytest.fixture(scope="module")
def service_address():
    """A dispatcher with 2 workers in this process, for the module's tests."""
    address, servers = start_local_service(0, workers=2)
    yield address
    stop_servers(servers)


def _distributed_counts(address: str, mode: str) -> collections.Counter:
    dataset = tf.data.Dataset.range(20).apply(
        tf.data.experimental.service.distribute(processing_mode=mode, service=address)
    )
    return collections.Counter(int(x) for x in dataset.as_numpy_iterator())


def test_parallel_epochs_yields_every_element_once_per_worker(service_address):
    assert _distributed_counts(service_address, "parallel_epochs") == {i: 2 for i in range(20)}


def test_distributed_epoch_yields_every_element_once(service_address):
    assert _distributed_counts(service_address, "distributed_epoch") == {i: 1 for i in range(20)}


def test_start_on_a_busy_port_raises_a_usage_error():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(UsageError, match=f"port {port} is already in use"):
            start_local_service(port, workers=1)


def test_cli_prints_its_address_and_stops_on_sigterm(cli_env):
    command = [PYTHON, "-m", "models.data.service", "--port=0", "--workers=1"]
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    with subprocess.Popen(command, text=True, env=cli_env, **pipes) as process:
        try:
            line = process.stdout.readline().strip()
            match = ADDRESS_LINE.fullmatch(line)
            assert match, f"unexpected first line {line!r}"
            socket.create_connection(("localhost", int(match[1])), timeout=10).close()
            process.send_signal(signal.SIGTERM)
            _, stderr = process.communicate(timeout=30)
        finally:
            process.kill()
    assert process.returncode == 0, stderr


def test_cli_port_in_use_is_one_line_and_exit_2(cli_env):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = subprocess.run(
            [PYTHON, "-m", "models.data.service", f"--port={port}"],
            capture_output=True,
            text=True,
            env=cli_env,
            timeout=60,
        )
    assert result.returncode == 2
    assert result.stderr.strip() == f"error: port {port} is already in use"
