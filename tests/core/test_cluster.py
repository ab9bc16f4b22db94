"""Multi-worker cluster input: TF_CONFIG and --worker_hosts checks, a busy port, and a worker
that never comes up all end with one clear line, within a bounded time."""

from __future__ import annotations

import json
import socket
import time

import pytest
from zoo_testing import run_model

from models.core.cluster import Cluster, check_own_port, parse_tf_config
from models.core.ports import free_ports


def _tf_config(workers: list[str], index: int = 0) -> str:
    return json.dumps({"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}})


def test_valid_tf_config():
    cluster = parse_tf_config(_tf_config(["localhost:1234", "localhost:1235"], 1))
    assert cluster == Cluster({"worker": ["localhost:1234", "localhost:1235"]}, "worker", 1)
    assert cluster.address == "localhost:1235" and cluster.size == 2


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("", "needs the cluster in the TF_CONFIG"),
        ("{not json", "TF_CONFIG is malformed"),
        ('{"cluster": {"worker": ["localhost:1"]}}', "TF_CONFIG is malformed"),
        (_tf_config(["localhost"]), "not HOST:PORT"),
        (_tf_config(["localhost:99999"]), "port 1..65535"),
        (_tf_config(["localhost:1"], 3), "task worker:3 is not in the cluster"),
        ('{"cluster": {"ps": ["a:1"]}, "task": {"type": "ps", "index": 0}}', "chief/worker"),
    ],
)
def test_malformed_tf_config_names_the_problem(raw, message):
    with pytest.raises(Exception, match=message) as error:
        parse_tf_config(raw)
    assert type(error.value).__name__ == "UsageError"


def test_busy_own_port_is_reported():
    with socket.socket() as busy:
        busy.bind(("", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(Exception, match=f"port {port} .* is already in use"):
            check_own_port(parse_tf_config(_tf_config([f"localhost:{port}"])))


def _one_line_exit_2(result) -> None:
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.strip().count("\n") == 0, result.stderr[-2000:]


def test_cli_malformed_tf_config_and_flags(tmp_path, cli_env):
    env = dict(cli_env, TF_CONFIG='{"cluster": {"worker": ["localhost:1"]}}')
    result = run_model("resnet", tmp_path, env=env)
    _one_line_exit_2(result)
    assert "TF_CONFIG is malformed" in result.stderr
    result = run_model("resnet", tmp_path, "--worker_hosts=localhost:1,localhost:2", env=cli_env)
    _one_line_exit_2(result)
    assert "--worker_hosts and --task_index go together" in result.stderr
    assert not list(tmp_path.glob("ckpt-*"))


def test_cli_busy_worker_port(tmp_path, cli_env):
    with socket.socket() as busy:
        busy.bind(("", 0))
        busy.listen()
        port = busy.getsockname()[1]
        env = dict(cli_env, TF_CONFIG=_tf_config([f"localhost:{port}", "localhost:1"]))
        result = run_model("resnet", tmp_path, env=env)
    _one_line_exit_2(result)
    assert f"port {port} of worker 0 (localhost:{port}) is already in use" in result.stderr


def test_worker_that_never_comes_up_fails_within_the_timeout(tmp_path, cli_env):
    hosts = ",".join(f"localhost:{p}" for p in free_ports(2))
    start = time.monotonic()
    result = run_model(
        "resnet",
        tmp_path,
        f"--worker_hosts={hosts}",
        "--task_index=0",
        "--cluster_timeout_s=10",
        env=cli_env,
        timeout=120,
    )
    assert time.monotonic() - start < 90
    # TensorFlow blocks the whole process while it waits, so a watcher process kills it. Before
    # that, TensorFlow's gRPC server logs its start (C++ INFO lines); no traceback.
    assert result.returncode == -9
    lines = result.stderr.strip().splitlines()
    assert [line for line in lines if line.startswith("error:")] == lines[-1:]
    assert "did not come up within 10 s" in lines[-1] and "Traceback" not in result.stderr
