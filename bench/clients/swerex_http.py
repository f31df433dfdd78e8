"""A keep-alive HTTP/1.1 client for SWE-ReX's `POST /execute` (no aiohttp needed).

SWE-ReX's own RemoteRuntime client needs aiohttp and pydantic round trips; this one sends
the same JSON body with the `X-API-Key` header, which can only make SWE-ReX look faster.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from bench.clients.common import RunTimes


class _Closed(Exception):
    """The server closed the connection before answering."""


class SwerexConnection:
    """One persistent connection; requests on it are sequential."""

    def __init__(self, port: int, token: str) -> None:
        self._port, self._token = port, token
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def _connect(self) -> None:
        self._reader, self._writer = await asyncio.open_connection("127.0.0.1", self._port)

    async def post(self, path: str, body: Mapping[str, Any]) -> Any:
        """POST JSON, return the decoded JSON reply (raises on a non-200 status)."""
        try:
            return await self._post(path, body)
        except (ConnectionError, asyncio.IncompleteReadError, _Closed):
            # uvicorn drops keep-alive connections idle for 5 s; reconnect and resend once
            # (the request never reached the application).
            await self.close()
            return await self._post(path, body)

    async def _post(self, path: str, body: Mapping[str, Any]) -> Any:
        if self._writer is None:
            await self._connect()
        assert self._reader is not None and self._writer is not None
        data = json.dumps(body).encode()
        head = (
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-Key: {self._token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
        )
        self._writer.write(head.encode() + data)
        await self._writer.drain()
        status = await self._reader.readline()
        if not status:
            raise _Closed(path)
        length = 0
        while (line := await self._reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        payload = await self._reader.readexactly(length)
        if b" 200 " not in status:
            raise RuntimeError(f"swerex {path}: {status!r} {payload[:300]!r}")
        return json.loads(payload)

    async def close(self) -> None:
        """Close the socket."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None


async def execute(conn: SwerexConnection, argv: Sequence[str], env: Mapping[str, str],
                  cwd: str) -> RunTimes:  # fmt: skip
    """`/execute` (buffered: the whole output comes back in one JSON reply)."""
    t0 = time.perf_counter()
    reply = await conn.post("/execute", {"command": list(argv), "shell": False,
                                         "env": dict(env), "cwd": cwd})  # fmt: skip
    t = time.perf_counter() - t0
    out = reply.get("stdout", "")
    return RunTimes(t, t, len(out) + len(reply.get("stderr", "")), reply.get("exit_code"))
