"""A second daemon on a busy port fails at once with one clear line (no port sharing)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.router_harness import router_subprocess

DAEMONS = {
    "router": [sys.executable, "-m", "shellgate.router.cli", "serve"],
    "execserver": [sys.executable, "-m", "shellgate.execserver.cli", "serve"],
}


@pytest.mark.parametrize("daemon", sorted(DAEMONS))
def test_second_daemon_on_a_busy_port_exits_2(daemon: str) -> None:
    with router_subprocess() as (_proc, port):
        second = subprocess.run(
            [*DAEMONS[daemon], "--listen", f"127.0.0.1:{port}"],
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip
    assert second.returncode == 2, second.stderr
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1, second.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in lines[0]
    assert "Traceback" not in second.stderr


@pytest.mark.parametrize("daemon", sorted(DAEMONS))
@pytest.mark.parametrize("address", ["127.0.0.1:99999", "localhost"])
def test_malformed_listen_address_exits_2(daemon: str, address: str) -> None:
    result = subprocess.run(
        [*DAEMONS[daemon], "--listen", address], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 2, result.stderr
    assert address in result.stderr and "Traceback" not in result.stderr
