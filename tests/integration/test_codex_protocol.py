"""Codex's exec-server protocol on the daemon: handshake, refusals, pushed events, auth.

A real daemon in this event loop with its `--codex-listen` WebSocket listener, driven by a
real WebSocket client; one process table serves both protocols.
"""

from __future__ import annotations

import asyncio
import base64
import ssl
import urllib.request
from pathlib import Path

import pytest
from shellgate.common.auth import load_tokens
from shellgate.execserver.codex.ws import start_codex_ws
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.certs import make_tls
from tests.codex_sandbox_wire import codex_sandbox, entry
from tests.execserver_harness import daemon_config, in_process_daemon
from tests.integration.codex_ws_support import (
    REPLY_TIMEOUT_S,
    Client,
    codex_daemon,
    connect_codex,
    start_params,
)
from tests.waiting import eventually_async


def test_handshake_events_and_one_table(tmp_path: Path) -> None:
    """initialize → info with all capabilities false; output pushed with seq from 1."""

    async def main() -> None:
        async with codex_daemon() as (running, codex):
            client = await connect_codex(codex.port)
            info = (await client.call("environment/info"))["result"]
            assert info["shell"]["path"].startswith("/") and info["cwd"].startswith("file:///")
            assert info["capabilities"] and not any(info["capabilities"].values())
            assert (await client.call("environment/status"))["result"] == {"status": "ready"}
            again = await client.call("initialize", {"clientName": "test"})
            assert again["error"]["code"] == -32600
            argv = ["/bin/sh", "-c", "printf out; printf err >&2; exit 4"]
            started = await client.call("process/start", start_params("p1", argv, tmp_path))
            assert started["result"] == {"processId": "p1", "sandboxType": "none"}
            # The same table the gRPC service serves holds it, under the codex caller.
            assert [p.owner.startswith("codex:") for p in running.table.list("codex-local")] \
                == [True]  # fmt: skip
            events = await client.until_closed("p1")
            assert [e["params"]["seq"] for e in events] == list(range(1, len(events) + 1))
            out = b"".join(base64.b64decode(e["params"]["chunk"]) for e in events
                           if e["method"] == "process/output")  # fmt: skip
            assert sorted(out.decode()) == sorted("outerr")
            exited = [e["params"] for e in events if e["method"] == "process/exited"]
            assert exited and exited[0]["exitCode"] == 4
            read = (await client.call("process/read", {"processId": "p1", "afterSeq": 0}))
            assert read["result"]["exited"] and read["result"]["exitCode"] == 4
            assert (await client.call("process/terminate", {"processId": "p1"}))["result"] \
                == {"running": False}  # fmt: skip
            await client.ws.close()

    asyncio.run(main())


def test_unknown_method_and_unenforceable_requests_are_refused(tmp_path: Path) -> None:
    """-32601 for an unknown method; an unenforceable sandbox or managed network: refused."""
    marker = tmp_path / "ran"

    async def main() -> None:
        async with codex_daemon() as (running, codex):
            client = await connect_codex(codex.port)
            unknown = await client.call("http/request", {"url": "http://127.0.0.1/"})
            assert unknown["error"]["code"] == -32601
            assert "http/request" in unknown["error"]["message"]
            touch = ["/bin/sh", "-c", f"touch {marker}"]
            # A read restriction and an unknown path kind: bubblewrap here cannot enforce them.
            unreadable = codex_sandbox(tmp_path.as_uri(), [
                entry("root", "read"), entry("project_roots", "none", "secrets")])
            unknown_kind = codex_sandbox(tmp_path.as_uri(), [
                entry("root", "read"), entry("home", "write")])
            for extra in ({"sandbox": unreadable}, {"sandbox": unknown_kind},
                          {"sandbox": {"type": "workspaceWrite"}},
                          {"enforceManagedNetwork": True}):  # fmt: skip
                refused = await client.call("process/start", start_params("p", touch, tmp_path, **extra))
                assert refused["error"]["code"] == -32600
                assert "nothing ran" in refused["error"]["message"]
            fs = await client.call("fs/writeFile", {"path": marker.as_uri(), "dataBase64": "eA==",
                                                    "sandbox": unreadable})
            assert fs["error"]["code"] == -32600 and "nothing ran" in fs["error"]["message"]
            native = await client.call("fs/readFile", {"path": str(marker)})
            assert native["error"]["code"] == -32602
            missing = await client.call("fs/getMetadata", {"path": marker.as_uri()})
            assert missing["error"] == {"code": -32004,
                                        "message": "No such file or directory (os error 2)"}
            assert running.table.list("codex-local") == []
            await client.ws.close()
        assert not marker.exists()

    asyncio.run(main())


def test_closing_the_connection_kills_its_processes(tmp_path: Path) -> None:
    """A session's processes die with its connection (no orphans)."""

    async def main() -> None:
        async with codex_daemon() as (running, codex):
            client = await connect_codex(codex.port)
            await client.call("process/start", start_params("s", ["sleep", "60"], tmp_path))
            (proc,) = running.table.list("codex-local")
            await client.ws.close()
            await eventually_async(lambda: proc.exited, "the process ended", REPLY_TIMEOUT_S)

    asyncio.run(main())


def test_readyz_and_wss_bearer_auth(tmp_path: Path) -> None:
    """wss:// needs a token from the token file; /readyz answers without one."""
    tls = make_tls(tmp_path / "tls")
    tokens = tmp_path / "tokens"
    tokens.write_text("alice s3cret-token\n")
    trust = ssl.create_default_context(cafile=tls.ca_cert)

    async def main() -> None:
        config = daemon_config()
        async with in_process_daemon(config) as running:
            from shellgate.execserver.codex.protocol import CodexContext

            assert running.host_info is not None
            ctx = CodexContext(config, running.table, running.host_info, {})
            with pytest.raises(ValueError, match="loopback only"):
                await start_codex_ws(ctx, "ws://0.0.0.0:0", tokens=None)
            with pytest.raises(ValueError, match="needs --token-file"):
                await start_codex_ws(ctx, "wss://127.0.0.1:0", tokens=None,
                                     tls_cert=tls.server_cert, tls_key=tls.server_key)  # fmt: skip
            server = await start_codex_ws(
                ctx, "wss://127.0.0.1:0", tokens=load_tokens(str(tokens)),
                tls_cert=tls.server_cert, tls_key=tls.server_key,
            )  # fmt: skip
            try:
                url = f"wss://127.0.0.1:{server.port}"
                ready = await asyncio.to_thread(
                    urllib.request.urlopen, f"https://127.0.0.1:{server.port}/readyz",
                    context=trust, timeout=REPLY_TIMEOUT_S,
                )  # fmt: skip
                with ready:
                    assert ready.status == 200
                for header in ({}, {"Authorization": "Bearer wrong"}):
                    with pytest.raises(InvalidStatus) as denied:
                        await connect(url, ssl=trust, additional_headers=header)
                    assert denied.value.response.status_code == 401
                ws = await connect(url, ssl=trust,
                                   additional_headers={"Authorization": "Bearer s3cret-token"})
                client = Client(ws)
                reply = await client.call("initialize", {"clientName": "test"})
                assert "sessionId" in reply["result"]
                await ws.close()
            finally:
                await server.stop()

    asyncio.run(main())
