"""Both daemons' `/metrics` listener answers only requests for itself (common/http_guard).

A DNS-rebinding page reaches a loopback metrics port under its own name (`Host`), and a page
of another local port sends its own `Origin`: both are refused (421 / 403) before the
metrics are rendered, on a real router and a real exec-server daemon.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.execserver_harness import daemon_subprocess
from tests.router_harness import router_subprocess

pytestmark = pytest.mark.timeout(90)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _get(port: int, headers: dict[str, str]) -> tuple[int, bytes]:
    """(status, body) of a raw GET /metrics to 127.0.0.1:port with exactly these headers."""
    head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(f"GET /metrics HTTP/1.1\r\n{head}Connection: close\r\n\r\n".encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    status_line, _, rest = data.partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2]


def _check_guarded(port: int) -> None:
    status, body = _get(port, {"Host": f"127.0.0.1:{port}"})
    assert status == 200 and b"# HELP" in body
    for host in (f"localhost:{port}", f"[::1]:{port}", f"127.0.0.2:{port}"):
        assert _get(port, {"Host": host})[0] == 200, host
    for host in (f"evil.example:{port}", "evil.example", f"127.0.0.1:{port + 1}", "127.0.0.1"):
        status, body = _get(port, {"Host": host})
        assert status == 421 and b"# HELP" not in body, host
    assert _get(port, {})[0] == 421  # no Host at all
    for origin in (f"http://localhost:{port + 1}", "http://evil.example", "null"):
        status, body = _get(port, {"Host": f"127.0.0.1:{port}", "Origin": origin})
        assert status == 403 and b"# HELP" not in body, origin
    assert _get(port, {"Host": f"localhost:{port}", "Origin": f"http://localhost:{port}"})[0] == 200


def test_router_metrics_refuse_foreign_hosts_and_origins(tmp_path: Path) -> None:
    port = _free_port()
    config = tmp_path / "router.toml"
    config.write_text(f'metrics_listen = "127.0.0.1:{port}"\n')
    with router_subprocess(["--config", str(config)]):
        _check_guarded(port)


def test_daemon_metrics_refuse_foreign_hosts_and_origins(tmp_path: Path) -> None:
    port = _free_port()
    config = tmp_path / "execserver.toml"
    config.write_text(f'metrics_listen = "127.0.0.1:{port}"\n')
    with daemon_subprocess(["--config", str(config)]):
        _check_guarded(port)
