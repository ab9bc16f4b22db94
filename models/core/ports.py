"""Loopback ports for local clusters and services (no TensorFlow import: checks fail fast)."""

from __future__ import annotations

import socket

from models.core.errors import UsageError


def check_port_free(port: int, owner: str = "") -> None:
    """UsageError `port P [of OWNER] is already in use` if a server could not bind it now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT is not "in use"
        try:
            probe.bind(("", port))
        except OSError as error:
            of = f" of {owner}" if owner else ""
            raise UsageError(f"port {port}{of} is already in use") from error


def free_ports(count: int) -> list[int]:
    """`count` distinct ports the OS reports free (all held open at once, then released)."""
    probes = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for probe in probes:
            probe.bind(("", 0))
        return [probe.getsockname()[1] for probe in probes]
    finally:
        for probe in probes:
            probe.close()


def check_reachable(host: str, port: int, owner: str, timeout_s: float = 10.0) -> None:
    """UsageError naming `owner` unless a TCP connection to HOST:PORT opens within timeout_s."""
    try:
        socket.create_connection((host, port), timeout=timeout_s).close()
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise UsageError(f"{owner}: nothing answers at {host}:{port} ({reason})") from None


def split_address(address: str, owner: str) -> tuple[str, int]:
    """grpc://HOST:PORT or HOST:PORT -> (HOST, PORT); UsageError naming `owner` otherwise."""
    host, _, port = address.removeprefix("grpc://").rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"{owner} is not HOST:PORT (grpc:// optional; port 1..65535)")
    return host, int(port)
