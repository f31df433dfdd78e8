"""The Codex WebSocket listener against the attacker test's other findings, on a real daemon.

`shellgate-execserver serve --codex-listen ws://127.0.0.1:0` runs as a process: an
unauthenticated 60 MiB frame must not grow it (its peak RSS is read from /proc), another
local user must not run commands through it, and a page of another local port in a real
Chromium must not open it.
"""

from __future__ import annotations

import contextlib
import http.server
import os
import pwd
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from shellgate.common.local_token import read_local_token, token_path

from tests.execserver_harness import daemon_subprocess
from tests.integration.ws_raw import handshake, text_frame

OTHER_USER = "shellgate-ssh"  # created by scripts/setup-test.sh
BIG = 60 * 1024 * 1024
TIMEOUT_S = 30


@pytest.fixture(autouse=True)
def runtime_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private XDG_RUNTIME_DIR (the daemons inherit it)."""
    base = tmp_path / "run"
    base.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(base))
    yield base


@contextlib.contextmanager
def _codex_process(*extra: str, local_token: bool = True) -> Iterator[tuple[int, int]]:
    """The daemon process with `--codex-listen`; (pid, Codex port)."""
    args = ["--codex-listen", "ws://127.0.0.1:0", *extra]
    with daemon_subprocess(args, local_token=local_token) as daemon:
        assert daemon.proc.stdout is not None
        yield daemon.proc.pid, int(daemon.proc.stdout.readline())


def _peak_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def _exchange(
    port: int, request: bytes, then: bytes = b"", wait_answer: bool = False, drain: bool = True
) -> bytes:
    """Send a handshake and a payload (behind it, or after the answer); what came back."""
    # The daemon closes a refused connection at once; the timeout only ends a listener's
    # wait that would keep it open (the unfixed one did).
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        answer = sock.recv(4096) if wait_answer else b""
        if not drain:
            return answer
        with contextlib.suppress(OSError):  # the daemon may cut the connection under us
            sock.sendall(then)
        with contextlib.suppress(OSError):
            while chunk := sock.recv(65536):
                answer += chunk
        return answer


def test_a_pre_auth_big_frame_is_never_buffered() -> None:
    """60 MiB frames from unauthenticated peers leave the daemon's peak RSS where it was."""
    frame = text_frame(b"a" * BIG)
    with _codex_process() as (pid, port):
        before = _peak_rss_kib(pid)
        token = read_local_token("execserver", port)
        # Right behind a token-less request; after its 401; after a foreign Origin's 403.
        behind = _exchange(port, handshake(port), frame)
        after = _exchange(port, handshake(port), frame, wait_answer=True)
        foreign = handshake(port, token=token, origin="http://localhost:9999")
        after_origin = _exchange(port, foreign, frame, wait_answer=True)
        unauthenticated = _peak_rss_kib(pid) - before
        # The measure sees a buffered frame: an authenticated one of the same size is read.
        with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S) as sock:
            sock.sendall(handshake(port, token=token))
            assert sock.recv(4096).startswith(b"HTTP/1.1 101 ")
            sock.sendall(frame)
            assert b"parse error" in sock.recv(65536)  # read whole, then answered
        authenticated = _peak_rss_kib(pid) - before
    assert unauthenticated < 16 * 1024, f"peak RSS grew {unauthenticated} KiB before auth"
    # Answered before the frame's bytes came (401), or cut off when they came first.
    assert behind == b"" or behind.startswith(b"HTTP/1.1 401 "), behind[:200]
    assert after.startswith(b"HTTP/1.1 401 "), after[:200]
    assert after_origin.startswith(b"HTTP/1.1 403 "), after_origin[:200]
    assert authenticated > BIG // 1024, f"the measure missed a buffered frame ({authenticated})"


def test_codex_host_names_the_listener() -> None:
    """`--codex-host NAME`: that Host is served too; other names still are not."""
    with _codex_process("--codex-host", "build.example") as (_pid, port):
        token = read_local_token("execserver", port)
        named = _exchange(port, handshake(port, token=token, host=f"build.example:{port}"),
                          wait_answer=True, drain=False)  # fmt: skip
        other = _exchange(port, handshake(port, token=token, host=f"evil.example:{port}"))
    assert named.startswith(b"HTTP/1.1 101 "), named[:200]
    assert other.startswith(b"HTTP/1.1 421 "), other[:200]


@pytest.mark.skipif(os.getuid() != 0 or not shutil.which("runuser") or not shutil.which("curl"),
                    reason="needs root, runuser and curl")  # fmt: skip
def test_another_local_user_cannot_use_the_listener(runtime_dir: Path) -> None:
    """Another user of the machine can neither read the token nor upgrade without it."""
    try:
        pwd.getpwnam(OTHER_USER)
    except KeyError:
        pytest.skip(f"no {OTHER_USER} user (scripts/setup-test.sh creates it)")
    for folder in (runtime_dir, *runtime_dir.parents):  # only the token's own modes protect it
        if str(folder) in ("/", "/tmp"):
            break
        os.chmod(folder, os.stat(folder).st_mode | 0o011)
    with _codex_process() as (_pid, port):
        as_other = ["runuser", "-u", OTHER_USER, "--"]
        read = subprocess.run([*as_other, "cat", str(token_path("execserver", port))],
                              capture_output=True, text=True, timeout=TIMEOUT_S)  # fmt: skip
        assert read.returncode != 0 and "Permission denied" in read.stderr
        upgrade = subprocess.run(
            [*as_other, "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-m", "10",
             "-H", "Connection: Upgrade", "-H", "Upgrade: websocket",
             "-H", "Sec-WebSocket-Version: 13", "-H", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
             f"http://127.0.0.1:{port}/"],
            capture_output=True, text=True, timeout=TIMEOUT_S,
        )  # fmt: skip
        assert upgrade.stdout == "401", upgrade


class _Page(http.server.BaseHTTPRequestHandler):
    body = b""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


_SCRIPT = """<script>
window.result = "pending";
const ws = new WebSocket("ws://127.0.0.1:%(port)d/");
ws.onopen = () => {
  window.result = "open";
  ws.send(JSON.stringify({id: 1, method: "initialize", params: {clientName: "page"}}));
  ws.send(JSON.stringify({method: "initialized", params: {}}));
  ws.send(JSON.stringify({id: 2, method: "process/start", params: {processId: "p",
    argv: ["/bin/sh", "-c", "id -un > %(marker)s"], cwd: "file:///tmp", env: {},
    tty: false, pipeStdin: false}}));
};
ws.onerror = () => { if (window.result === "pending") window.result = "error"; };
ws.onclose = () => { window.result += ":closed"; };
</script>"""


@contextlib.contextmanager
def _page(port: int, marker: Path) -> Iterator[str]:
    """A page on another local port whose script opens the Codex listener and runs a command."""
    handler = type(
        "Page", (_Page,), {"body": (_SCRIPT % {"port": port, "marker": marker}).encode()}
    )
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("opted_out", [False, True], ids=["token", "no-local-token"])
def test_a_page_on_another_port_cannot_open_the_listener(
    browser: Any, opted_out: bool, tmp_path: Path
) -> None:
    """Chromium on a page of another local port: the handshake is refused, nothing runs.

    With `--no-local-token` the Origin check alone stands in its way (a page cannot send a
    bearer token on a WebSocket, so with the token either check refuses it).
    """
    from tests.integration.console_support import wait_for

    marker = tmp_path / "page-ran"
    with _codex_process(local_token=not opted_out) as (_pid, port), _page(port, marker) as url:
        browser.get(url)
        wait_for(lambda: browser.execute_script("return window.result").endswith(":closed"),
                 TIMEOUT_S, "the page's WebSocket to close")  # fmt: skip
        assert browser.execute_script("return window.result") == "error:closed"
    assert not marker.exists()
