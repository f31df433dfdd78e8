"""`shellgate mcp --http` is safe by default on a shared host.

With no `--http-token-file` the front generates a bearer token in a 0600 file of the user's
runtime directory (removed at exit, its path printed on stderr): without that token another
local user gets 401. Every request's Host must name the address served and a present
Origin must be the front's own, whatever loopback address it binds (127.0.0.1, 127.0.0.2,
[::1]) — a DNS-rebinding page or a page of another local port is refused before any work.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from tests.integration.mcp_support import MCP, http_client, http_server, text_of
from tests.integration.test_client_support import router_env, router_process

pytestmark = pytest.mark.timeout(120)
OTHER_USER = "shellgate-ssh"  # created by scripts/setup-test.sh
INITIALIZE = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    b'"capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}'
)


@pytest.fixture
def runtime_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private XDG_RUNTIME_DIR (the servers started here inherit it)."""
    base = tmp_path / "run"
    base.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(base))
    return base


def _status(bind: str, port: int, headers: dict[str, str], body: bytes = INITIALIZE) -> int:
    """The status of one raw HTTP/1.1 POST /mcp to bind:port with exactly these headers."""
    lines = [
        "POST /mcp HTTP/1.1",
        *(f"{name}: {value}" for name, value in headers.items()),
        "Content-Type: application/json",
        "Accept: application/json, text/event-stream",
        f"Content-Length: {len(body)}",
        "Connection: close",
    ]
    family = socket.AF_INET6 if ":" in bind else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.settimeout(20)
        sock.connect((bind.strip("[]"), port))
        sock.sendall("\r\n".join(lines).encode() + b"\r\n\r\n" + body)
        head = sock.recv(4096).split(b"\r\n", 1)[0]
    return int(head.split()[1])


def test_the_default_front_takes_only_its_generated_token(
    runtime_dir: Path, tmp_path: Path
) -> None:
    log = tmp_path / "mcp.log"
    args = ["--sandbox", "danger-full-access", "--cwd", str(tmp_path)]
    with http_server(args, stderr_path=log) as (_, port):
        token_file = runtime_dir / "shellgate" / f"mcp-{port}.token"
        assert token_file.stat().st_mode & 0o777 == 0o600
        assert token_file.parent.stat().st_mode & 0o777 == 0o700
        token = token_file.read_text().strip()
        assert len(token) >= 43  # secrets.token_urlsafe(32)
        url = f"http://127.0.0.1:{port}/mcp"
        host = {"Host": f"127.0.0.1:{port}"}
        assert _status("127.0.0.1", port, host) == 401
        assert _status("127.0.0.1", port, {**host, "Authorization": "Bearer wrong"}) == 401
        assert _status("127.0.0.1", port, {**host, "Authorization": f"Bearer {token}x"}) == 401

        async def main() -> None:
            async with http_client(url, token) as client:
                names = [tool.name for tool in (await client.list_tools()).tools]
                assert names == ["exec_command", "write_stdin", "apply_patch"]
                done = text_of(await client.call_tool("exec_command", {"cmd": "echo tok-ok"}))
                assert "Process exited with code 0" in done and "tok-ok" in done

        anyio.run(main)
        printed = log.read_text()
        assert str(token_file) in printed
    assert not token_file.exists(), "the token file outlived the server"
    assert token not in log.read_text()


@pytest.fixture(scope="module")
def router_port() -> Iterator[int]:
    """One router the fronts below share (it trusts local callers: the fronts' runtime
    directories are per test, so they would not find a token it published)."""
    with router_process(["--sandbox", "danger-full-access", "--no-local-token"]) as router:
        yield router.port


def _loopback_available(bind: str) -> bool:
    family = socket.AF_INET6 if ":" in bind else socket.AF_INET
    try:
        with socket.socket(family) as probe:
            probe.bind((bind.strip("[]"), 0))
    except OSError:
        return False
    return True


@pytest.mark.parametrize("bind", ["127.0.0.1", "127.0.0.2", "[::1]"])
def test_foreign_hosts_and_origins_are_refused_before_any_work(
    runtime_dir: Path, router_port: int, bind: str
) -> None:
    if not _loopback_available(bind):
        pytest.skip(f"cannot bind {bind} here")
    with http_server(["--router", f"127.0.0.1:{router_port}"], bind=bind) as (_, port):
        foreign = (f"evil.example:{port}", "evil.example", f"localhost.evil:{port}",
                   f"127.0.0.1:{port + 1}", f"{bind}")  # fmt: skip
        for host in foreign:
            assert _status(bind, port, {"Host": host}) == 421, host
        token = (runtime_dir / "shellgate" / f"mcp-{port}.token").read_text().strip()
        auth = {"Authorization": f"Bearer {token}"}
        for host in foreign:
            # Refused even with the right token: a rebinding page never reaches the server.
            assert _status(bind, port, {"Host": host, **auth}) == 421, host
        # Every loopback spelling on the front's own port names it (then the token decides).
        for host in (f"{bind}:{port}", f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}"):
            assert _status(bind, port, {"Host": host}) == 401, host
        own = f"http://{bind}:{port}"
        assert _status(bind, port, {"Host": f"{bind}:{port}", "Origin": own, **auth}) == 200
        for origin in (f"http://localhost:{port + 1}", "http://evil.example", "null",
                       f"https://{bind}:{port}"):  # fmt: skip
            headers = {"Host": f"{bind}:{port}", "Origin": origin, **auth}
            assert _status(bind, port, headers) == 403, origin


def test_no_local_token_opts_out_and_off_loopback_needs_a_token_file(
    runtime_dir: Path, router_port: int
) -> None:
    args = ["--router", f"127.0.0.1:{router_port}", "--no-local-token"]
    with http_server(args) as (_, port):
        assert not (runtime_dir / "shellgate" / f"mcp-{port}.token").exists()
        assert _status("127.0.0.1", port, {"Host": f"127.0.0.1:{port}"}) == 200
    for address in ("0.0.0.0:0", "192.0.2.1:0"):
        done = subprocess.run(
            [*MCP, "--http", address, "--router", f"127.0.0.1:{router_port}"],
            capture_output=True, text=True, timeout=30, env=router_env(), check=False,
        )  # fmt: skip
        assert done.returncode == 2
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "needs --http-token-file" in lines[0], done.stderr


@pytest.mark.skipif(os.getuid() != 0 or shutil.which("runuser") is None, reason="needs root")
def test_another_local_user_cannot_read_the_token(runtime_dir: Path, router_port: int) -> None:
    try:
        pwd.getpwnam(OTHER_USER)
    except KeyError:
        pytest.skip(f"no {OTHER_USER} user (scripts/setup-test.sh creates it)")
    # Let the other user reach the folder itself: only the token's own modes protect it.
    for folder in (runtime_dir, *runtime_dir.parents):
        if str(folder) in ("/", "/tmp"):
            break
        os.chmod(folder, os.stat(folder).st_mode | 0o011)
    with http_server(["--router", f"127.0.0.1:{router_port}"]) as (_, port):
        token_file = runtime_dir / "shellgate" / f"mcp-{port}.token"
        attempt = subprocess.run(
            ["runuser", "-u", OTHER_USER, "--", "cat", str(token_file)],
            capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
        assert attempt.returncode != 0 and "Permission denied" in attempt.stderr
        assert token_file.read_text().strip() not in attempt.stdout
        if shutil.which("curl") is None:
            return
        # Without the token that user's requests get nothing but 401.
        probe = subprocess.run(
            ["runuser", "-u", OTHER_USER, "--", "curl", "-s", "-o", "/dev/null", "-w",
             "%{http_code}", "-X", "POST", "-H", "Content-Type: application/json",
             "-H", "Accept: application/json, text/event-stream", "--data", INITIALIZE.decode(),
             f"http://127.0.0.1:{port}/mcp"],
            capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
        assert probe.stdout == "401", (probe.stdout, probe.stderr)
