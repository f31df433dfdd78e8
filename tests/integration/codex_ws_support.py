"""Codex WebSocket test support: a daemon with `--codex-listen` in this loop, its clients.

`codex_daemon` starts the real daemon in-process with the default credentials (the generated
local token, published for the Codex port too); `connect_codex` finds that token where
`shellgate-execserver token --port` does (raw handshakes: `tests.integration.ws_raw`).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from shellgate.common.local_token import read_local_token
from shellgate.execserver.codex.runner import start_beside
from shellgate.execserver.codex.ws import CodexWsServer
from shellgate.execserver.config import CodexWsLimits, ServerConfig
from shellgate.execserver.server import RunningServer
from websockets.asyncio.client import ClientConnection, connect

from tests.execserver_harness import daemon_config, in_process_daemon

REPLY_TIMEOUT_S = 10


class Client:
    """A JSON-RPC client over one WebSocket, keeping notifications aside."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.notes: list[dict[str, Any]] = []
        self._next = 0

    async def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a request; its whole answer (result or error)."""
        self._next += 1
        await self.ws.send(json.dumps({"id": self._next, "method": method, "params": params}))
        async with asyncio.timeout(REPLY_TIMEOUT_S):
            while True:
                message = json.loads(await self.ws.recv())
                if message.get("id") == self._next:
                    return dict(message)
                self.notes.append(message)

    async def until_closed(self, process_id: str) -> list[dict[str, Any]]:
        """Notifications of one process until its process/closed."""
        async with asyncio.timeout(REPLY_TIMEOUT_S):
            while not any(n["method"] == "process/closed" and n["params"]["processId"]
                          == process_id for n in self.notes):  # fmt: skip
                self.notes.append(json.loads(await self.ws.recv()))
        return [n for n in self.notes if n["params"]["processId"] == process_id]

    async def output_of(self, process_id: str) -> bytes:
        """Everything a process wrote, once it closed."""
        notes = await self.until_closed(process_id)
        return b"".join(base64.b64decode(n["params"]["chunk"]) for n in notes
                        if n["method"] == "process/output")  # fmt: skip


def start_params(process_id: str, argv: list[str], cwd: Path, **extra: Any) -> dict[str, Any]:
    """`process/start` params as Codex sends them (no sandbox unless given)."""
    return {"processId": process_id, "argv": argv, "cwd": cwd.as_uri(), "env": {},
            "tty": False, "pipeStdin": False, **extra}  # fmt: skip


@contextlib.asynccontextmanager
async def codex_daemon(
    config: ServerConfig | None = None, url: str = "ws://127.0.0.1:0"
) -> AsyncIterator[tuple[RunningServer, CodexWsServer]]:
    """The daemon and its Codex listener, with the default local token unless `config` says."""
    config = config or daemon_config(local_token=True)
    async with in_process_daemon(config) as running:
        codex = await start_beside(running, config, url)
        try:
            yield running, codex
        finally:
            await codex.stop()


def limits_config(**limits: Any) -> ServerConfig:
    """The default-credentials config with some `codex_ws` bounds changed."""
    return daemon_config(local_token=True, codex_ws=replace(CodexWsLimits(), **limits))


def published_token(port: int) -> str:
    """The token the daemon published for `port` (what `shellgate-execserver token` prints)."""
    token = read_local_token("execserver", port)
    assert token, f"no token published for port {port}"
    return token


async def connect_codex(port: int, token: str | None = None, **headers: str) -> Client:
    """An initialized session on the listener at `port` (its published token by default)."""
    auth = {"Authorization": f"Bearer {token or published_token(port)}", **headers}
    client = Client(await connect(f"ws://127.0.0.1:{port}", compression=None,
                                  additional_headers=auth))  # fmt: skip
    reply = await client.call("initialize", {"clientName": "test"})
    assert reply["result"]["sessionId"]
    await client.ws.send(json.dumps({"method": "initialized", "params": {}}))
    return client
