"""`python -m models.launch`: per-worker TF_CONFIG, prefixed output, failure and signal handling."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time

import pytest
from zoo_testing import PYTHON

from models.launch import describe_exit

# Every worker snippet starts by reading its own index from TF_CONFIG.
PRELUDE = (
    "import json, os, signal, sys, time\ni = json.loads(os.environ['TF_CONFIG'])['task']['index']\n"
)


def launch(*flags: str, body: str | None = None, env: dict, timeout: float = 60):
    """Runs the launcher with `flags` and, if given, a `python -c PRELUDE+body` worker."""
    command = [PYTHON, "-m", "models.launch", *flags]
    if body is not None:
        command += ["--", PYTHON, "-c", PRELUDE + body]
    start = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout)
    return result, time.monotonic() - start


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def test_each_worker_gets_its_own_tf_config_and_prefixed_output(cli_env):
    body = "print(os.environ['TF_CONFIG']); print(f'note {i}', file=sys.stderr)"
    result, _ = launch("--workers=3", body=body, env=cli_env)
    assert result.returncode == 0, result.stderr
    configs = {}
    for line in result.stdout.splitlines():
        prefix, _, config = line.partition("] ")
        configs[prefix] = json.loads(config)
    assert sorted(configs) == ["[worker 0", "[worker 1", "[worker 2"]
    cluster = configs["[worker 0"]["cluster"]
    assert len(set(cluster["worker"])) == 3
    assert all(address.startswith("localhost:") for address in cluster["worker"])
    for index in range(3):
        config = configs[f"[worker {index}"]
        assert config == {"cluster": cluster, "task": {"type": "worker", "index": index}}
        assert f"[worker {index}] note {index}" in result.stderr.splitlines()


def test_fixed_ports_are_used_in_order(cli_env):
    ports = [_free_port(), _free_port()]
    body = "print(os.environ['TF_CONFIG'])"
    result, _ = launch(f"--ports={ports[0]},{ports[1]}", body=body, env=cli_env)
    assert result.returncode == 0, result.stderr
    first = json.loads(result.stdout.splitlines()[0].partition("] ")[2])
    assert first["cluster"]["worker"] == [f"localhost:{p}" for p in ports]


def test_killed_worker_stops_the_others_quickly(cli_env):
    body = (
        "print('up', flush=True)\n"
        "if i == 1: time.sleep(0.5); os.kill(os.getpid(), signal.SIGKILL)\n"
        "time.sleep(60)"
    )
    result, seconds = launch("--workers=3", body=body, env=cli_env)
    assert result.returncode == 1
    assert seconds < 20
    assert error_lines(result.stderr) == [
        "error: worker 1 exited with code -9 (SIGKILL); stopping the other workers"
    ]


def test_worker_exit_code_is_passed_on_and_stubborn_workers_are_killed(cli_env):
    body = (
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print('up', flush=True)\n"
        "if i == 1: time.sleep(0.5); sys.exit(3)\n"
        "time.sleep(60)"
    )
    result, seconds = launch("--workers=2", "--grace_s=1", body=body, env=cli_env)
    assert result.returncode == 3
    assert seconds < 20
    assert error_lines(result.stderr) == [
        "error: worker 1 exited with code 3; stopping the other workers"
    ]
    assert "SIGKILL" in result.stderr


def test_sigterm_to_the_launcher_is_forwarded_to_every_worker(cli_env):
    body = (
        "signal.signal(signal.SIGTERM, lambda *_: (print(f'stopping {i}'), sys.exit(0)))\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)"
    )
    command = [PYTHON, "-m", "models.launch", "--workers=2", "--", PYTHON, "-c", PRELUDE + body]
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    with subprocess.Popen(command, text=True, env=cli_env, **pipes) as process:
        ready = [process.stdout.readline() for _ in range(2)]
        assert sorted(ready) == ["[worker 0] ready\n", "[worker 1] ready\n"]
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == 128 + signal.SIGTERM, stderr
    assert {"[worker 0] stopping 0", "[worker 1] stopping 1"} <= set(stdout.splitlines())


def test_startup_timeout_names_the_silent_worker(cli_env):
    body = "if i == 0: print('up', flush=True)\ntime.sleep(60)"
    result, seconds = launch("--workers=2", "--startup_timeout_s=2", body=body, env=cli_env)
    assert result.returncode == 1
    assert seconds < 20
    assert error_lines(result.stderr) == [
        "error: worker 1 printed nothing within 2 s of starting; stopping all workers"
    ]


def test_port_in_use_fails_before_starting_anything(cli_env, tmp_path):
    marker = tmp_path / "started"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        body = f"open({str(marker)!r}, 'w').close()"
        result, _ = launch(f"--ports={port},{_free_port()}", body=body, env=cli_env)
    assert result.returncode == 2
    assert result.stderr.strip() == f"error: port {port} is already in use"
    assert not marker.exists()


@pytest.mark.parametrize(
    "flags",
    [
        ["--workers=2"],
        ["--workers=2", "--"],
        ["--workers=0", "--", PYTHON, "-c", "pass"],
        ["--workers=2", PYTHON, "-c", "pass"],
    ],
    ids=["no-command", "empty-command", "zero-workers", "command-without-dashes"],
)
def test_bad_usage_is_one_line_and_exit_2(cli_env, flags):
    result, _ = launch(*flags, env=cli_env)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith("error: ")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("", 0))
        return probe.getsockname()[1]


def test_exit_descriptions_name_signals_and_preemption():
    assert describe_exit(3) == "code 3"
    assert describe_exit(-9) == "code -9 (SIGKILL)"
    assert "checkpoint saved" in describe_exit(143)
