"""The Codex WebSocket listener's door: token, Host, Origin and connection caps before any work.

Each finding of the attacker test against `serve --codex-listen ws://127.0.0.1:P` (every
handshake accepted: no token, no Origin or Host check, `--token-file` ignored on ws://, idle
connections without bound) is one test here, against the real listener in this event loop,
driven by the `websockets` client and raw sockets.
"""

from __future__ import annotations

import asyncio
import getpass
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from shellgate.common.auth import hashed_token_line
from shellgate.common.local_token import read_local_token
from shellgate.execserver.codex.door import Door
from shellgate.execserver.config import CodexWsLimits
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.certs import make_tls
from tests.execserver_harness import daemon_config
from tests.integration.codex_ws_support import (
    REPLY_TIMEOUT_S,
    codex_daemon,
    connect_codex,
    limits_config,
    published_token,
    start_params,
)
from tests.integration.ws_raw import handshake, raw_request, text_frame
from tests.waiting import eventually_async


@pytest.fixture(autouse=True)
def runtime_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private XDG_RUNTIME_DIR: the published token files of this test only."""
    base = tmp_path / "run"
    base.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(base))
    yield base


def _frames(marker: Path) -> bytes:
    """initialize + process/start `touch marker`: what a page or another user would send."""
    messages = [
        {"id": 1, "method": "initialize", "params": {"clientName": "intruder"}},
        {"method": "initialized", "params": {}},
        {"id": 2, "method": "process/start",
         "params": start_params("x", ["/bin/sh", "-c", f"touch {marker}"], marker.parent)},
    ]  # fmt: skip
    return b"".join(text_frame(json.dumps(m).encode()) for m in messages)


async def _run_id(port: int, tmp_path: Path, token: str | None = None, **headers: str) -> str:
    client = await connect_codex(port, token, **headers)
    await client.call("process/start", start_params("id", ["id", "-un"], tmp_path))
    out = (await client.output_of("id")).decode().strip()
    await client.ws.close()
    return out


def test_ws_needs_the_token_and_nothing_runs_without_it(tmp_path: Path) -> None:
    """No or a wrong token: 401 and nothing runs; the published token (CLI) works."""
    marker = tmp_path / "ran"

    async def main() -> None:
        async with codex_daemon() as (running, codex):
            url = f"ws://127.0.0.1:{codex.port}"
            for token in (None, "wrong", "", published_token(running.port) + "x"):
                status, body = await raw_request(codex.port, handshake(codex.port, token=token))
                assert status == 401, body
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic x"}):
                with pytest.raises(InvalidStatus) as denied:
                    await connect(url, additional_headers=headers)
                assert denied.value.response.status_code == 401
            # Frames right behind a token-less request: cut off, never read or run.
            status, _ = await raw_request(codex.port, handshake(codex.port), _frames(marker))
            assert status == 0
            assert running.table.list("codex-local") == []
            printed = await asyncio.to_thread(subprocess.run, [
                sys.executable, "-m", "shellgate.execserver.cli", "token", "--port",
                str(codex.port)], capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
            token = printed.stdout.strip()
            # The same token as the gRPC listener's, published for the Codex port too.
            assert token == read_local_token("execserver", running.port)
            assert await _run_id(codex.port, tmp_path, token) == getpass.getuser()
            assert [p.caller for p in running.table.list("codex-local")] == ["codex-local"]
        assert not marker.exists()
        assert read_local_token("execserver", codex.port) is None, "token file outlived it"

    asyncio.run(main())


def test_frames_before_the_answer_are_never_read(tmp_path: Path) -> None:
    """Bytes past the request before the answer (RFC 6455 §4.1): cut off, even with the token."""
    marker = tmp_path / "ran"

    async def main() -> None:
        async with codex_daemon() as (running, codex):
            token = published_token(codex.port)
            request = handshake(codex.port, token=token)
            assert (await raw_request(codex.port, request, _frames(marker)))[0] == 0
            # The head's blank line split over two reads, a frame byte right behind it.
            reader, writer = await asyncio.open_connection("127.0.0.1", codex.port)
            writer.write(request[:-1])
            await writer.drain()
            writer.write(request[-1:] + b"\x81")
            async with asyncio.timeout(REPLY_TIMEOUT_S):
                assert await reader.read() == b""
            writer.close()
            assert running.table.list("codex-local") == []
            assert await _run_id(codex.port, tmp_path) == getpass.getuser()
        assert not marker.exists()

    asyncio.run(main())


def test_token_file_applies_to_ws(tmp_path: Path) -> None:
    """With --token-file, ws:// needs one of its tokens (plain or hashed); the caller is its subject."""
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice tok-alice-1\n{hashed_token_line('bob', 'tok-bob-1')}\n")

    async def main() -> None:
        async with codex_daemon(daemon_config(token_file=str(tokens))) as (running, codex):
            assert read_local_token("execserver", codex.port) is None  # no generated token
            status, _ = await raw_request(codex.port, handshake(codex.port))
            assert status == 401
            status, _ = await raw_request(codex.port, handshake(codex.port, token="tok-alice-2"))
            assert status == 401
            assert await _run_id(codex.port, tmp_path, "tok-alice-1") == getpass.getuser()
            assert await _run_id(codex.port, tmp_path, "tok-bob-1") == getpass.getuser()
            assert (len(running.table.list("alice")), len(running.table.list("bob"))) == (1, 1)

    asyncio.run(main())


def test_under_mtls_the_codex_listener_gets_its_own_token(tmp_path: Path) -> None:
    """mTLS gives the gRPC listener no token: the Codex listener still requires one."""
    tls = make_tls(tmp_path / "tls")
    config = daemon_config(local_token=True, tls_cert_file=tls.server_cert,
                           tls_key_file=tls.server_key, tls_client_ca_file=tls.ca_cert)  # fmt: skip

    async def main() -> None:
        async with codex_daemon(config) as (running, codex):
            assert running.local_token is None
            assert (await raw_request(codex.port, handshake(codex.port)))[0] == 401
            assert await _run_id(codex.port, tmp_path) == getpass.getuser()

    asyncio.run(main())


def test_no_local_token_is_the_explicit_opt_out(tmp_path: Path) -> None:
    """--no-local-token (local_token = false) opens ws:// to local users; Host/Origin still hold."""

    async def main() -> None:
        async with codex_daemon(daemon_config(local_token=False)) as (_running, codex):
            assert read_local_token("execserver", codex.port) is None
            ws = await connect(f"ws://127.0.0.1:{codex.port}")
            await ws.close()
            status, _ = await raw_request(
                codex.port, handshake(codex.port, origin="http://localhost:9999")
            )
            assert status == 403
            status, _ = await raw_request(
                codex.port, handshake(codex.port, host=f"evil.example:{codex.port}")
            )
            assert status == 421

    asyncio.run(main())


@pytest.mark.parametrize(
    "origin",
    ["http://localhost:9999", "http://evil.example", "null", "http://127.0.0.1:1",
     "https://127.0.0.1:{port}", "http://evil.example:{port}", "file://"],
)  # fmt: skip
def test_a_foreign_origin_is_refused_before_auth(origin: str, tmp_path: Path) -> None:
    """A page's Origin other than the listener's own: 403, even with the right token."""

    async def main() -> None:
        async with codex_daemon() as (running, codex):
            token = read_local_token("execserver", codex.port)
            request = handshake(codex.port, token=token, origin=origin.format(port=codex.port))
            status, body = await raw_request(codex.port, request)
            assert status == 403, body
            assert b"foreign origin" in body
            assert running.table.list("codex-local") == []
            # No Origin (Codex, curl) or the listener's own: served.
            own = f"http://127.0.0.1:{codex.port}"
            assert await _run_id(codex.port, tmp_path, Origin=own) == getpass.getuser()

    asyncio.run(main())


def test_a_rebinding_host_is_refused_and_loopback_spellings_pass(tmp_path: Path) -> None:
    """Host must name this listener: another name or port is 421; every loopback spelling passes."""

    async def main() -> None:
        config = limits_config(hosts=("build.example",))
        async with codex_daemon(config) as (_running, codex):
            port = codex.port
            token = read_local_token("execserver", port)
            for host in (f"evil.example:{port}", "evil.example", f"127.0.0.1:{port + 1}",
                         f"127.0.0.1.nip.io:{port}", "127.0.0.1", ""):  # fmt: skip
                status, body = await raw_request(port, handshake(port, token=token, host=host))
                assert status == 421, (host, body)
                ready, _ = await raw_request(port, handshake(port, host=host, path="/readyz"))
                assert ready == 421, host
            for host in (f"127.0.0.2:{port}", f"[::1]:{port}", f"localhost:{port}",
                         f"LOCALHOST:{port}", f"build.example:{port}"):  # fmt: skip
                status, body = await raw_request(port, handshake(port, token=token, host=host))
                assert status == 101, (host, body)
            # /readyz needs no token, but its Host is checked like any request.
            ready, body = await raw_request(port, handshake(port, path="/readyz"))
            assert ready == 200 and body.endswith(b"ok\n")
            twice = handshake(port, token=token).replace(b"\r\n\r\n", b"\r\nHost: x\r\n\r\n")
            assert (await raw_request(port, twice))[0] == 400

    asyncio.run(main())


def test_idle_unauthenticated_connections_are_capped(tmp_path: Path) -> None:
    """120 silent connections: `max_unauthenticated` are held, the rest get 503 at once."""
    limits = CodexWsLimits(handshake_timeout_ms=120_000)  # the cap, not the timeout, acts
    cap, total = limits.max_unauthenticated, 120

    async def main() -> None:
        config = limits_config(handshake_timeout_ms=limits.handshake_timeout_ms)
        async with codex_daemon(config) as (_running, codex):
            door: Door = codex.door
            idle = [await asyncio.open_connection("127.0.0.1", codex.port) for _ in range(total)]
            await eventually_async(
                lambda: door.counts.open + door.counts.refused == total,
                "accepts",
                REPLY_TIMEOUT_S,
                0.01,
            )
            assert (door.counts.open, door.counts.unauthenticated) == (cap, cap)
            assert door.counts.refused == total - cap
            reads = [asyncio.ensure_future(reader.read()) for reader, _ in idle]
            await eventually_async(
                lambda: sum(r.done() for r in reads) >= total - cap,
                "refusals",
                REPLY_TIMEOUT_S,
                0.01,
            )
            answers = [r.result() for r in reads if r.done()]
            assert len(answers) == total - cap
            assert all(a.startswith(b"HTTP/1.1 503 ") and b"too many" in a for a in answers)
            # While the silent ones hold every unauthenticated slot, Codex is refused too.
            with pytest.raises(InvalidStatus) as busy:
                await connect_codex(codex.port)
            assert busy.value.response.status_code == 503
            for read in reads:
                read.cancel()
            for _reader, writer in idle:
                writer.close()
            await eventually_async(
                lambda: door.counts.open == 0, "the idle ones to go", REPLY_TIMEOUT_S, 0.01
            )
            assert await _run_id(codex.port, tmp_path) == getpass.getuser()

    asyncio.run(main())


def test_open_connections_are_capped(tmp_path: Path) -> None:
    """Past `max_connections` authenticated sessions, the next one gets 503 until one leaves."""

    async def main() -> None:
        async with codex_daemon(limits_config(max_connections=3)) as (_running, codex):
            sessions = [await connect_codex(codex.port) for _ in range(3)]
            with pytest.raises(InvalidStatus) as busy:
                await connect_codex(codex.port)
            assert busy.value.response.status_code == 503
            await sessions.pop().ws.close()
            await eventually_async(
                lambda: codex.door.counts.open == 2, "a session to leave", REPLY_TIMEOUT_S, 0.01
            )
            assert await _run_id(codex.port, tmp_path) == getpass.getuser()
            for client in sessions:
                await client.ws.close()

    asyncio.run(main())


def test_a_silent_or_half_sent_handshake_is_closed() -> None:
    """The handshake timeout closes a connection that sends nothing or half a request."""

    async def main() -> None:
        async with codex_daemon(limits_config(handshake_timeout_ms=300)) as (_running, codex):
            silent = await asyncio.open_connection("127.0.0.1", codex.port)
            half = await asyncio.open_connection("127.0.0.1", codex.port)
            half[1].write(handshake(codex.port)[:40])
            async with asyncio.timeout(REPLY_TIMEOUT_S):
                assert await silent[0].read() == b""
                assert await half[0].read() == b""
            await eventually_async(
                lambda: codex.door.counts.open == 0, "both to be closed", REPLY_TIMEOUT_S, 0.01
            )
            for _reader, writer in (silent, half):
                writer.close()

    asyncio.run(main())
