"""`shellgate mcp --http`: a response stream cut mid-call resumes, and the result arrives.

A loopback TCP proxy sits between the SDK's own client and the real front (private router).
Once the command runs, the test closes the proxied connection that carries the
`tools/call`; the SDK client reconnects with `GET` + `Last-Event-ID` (the priming event's
id, after its `retry:`) and the call's result comes on the resumed stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.integration.mcp_support import http_server, text_of, token_file
from tests.waiting import eventually_async

pytestmark = pytest.mark.timeout(90)


class _Link:
    """One proxied connection: both sockets and what each direction carried."""

    def __init__(self, client: asyncio.StreamWriter, server: asyncio.StreamWriter) -> None:
        self.client = client
        self.server = server
        self.sent = bytearray()  # client → server
        self.cut = False

    def close(self) -> None:
        for writer in (self.client, self.server):
            writer.close()


class CuttingProxy:
    """A loopback TCP proxy to `port` that can cut the connections that carried a request."""

    def __init__(self, port: int) -> None:
        self._upstream = port
        self.links: list[_Link] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self.port = 0

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[CuttingProxy]:
        """Listen on 127.0.0.1:0 until the block ends; then every link is closed and awaited."""
        server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        try:
            yield self
        finally:
            server.close()
            for link in self.links:
                link.close()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            await server.wait_closed()

    def cut(self, needle: bytes) -> int:
        """Close (both ends) every live connection whose request bytes hold `needle`."""
        hits = [link for link in self.links if needle in link.sent and not link.cut]
        for link in hits:
            link.cut = True
            link.close()
        return len(hits)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self._upstream)
        link = _Link(writer, up_writer)
        self.links.append(link)
        try:
            await asyncio.gather(self._pump(reader, up_writer, link.sent),
                                 self._pump(up_reader, writer, None), return_exceptions=True)  # fmt: skip
        finally:
            link.close()

    @staticmethod
    async def _pump(
        source: asyncio.StreamReader, sink: asyncio.StreamWriter, record: bytearray | None
    ) -> None:
        while data := await source.read(65536):
            if record is not None:
                record += data
            sink.write(data)
            await sink.drain()
        sink.close()


def _running_in(cwd: Path, argv: list[bytes]) -> bool:
    """Whether a live process runs `argv` in `cwd` (the call's command has started)."""
    wanted = b"\0".join(argv) + b"\0"
    for entry in Path("/proc").iterdir():
        try:
            if (entry / "cmdline").read_bytes() == wanted and os.readlink(entry / "cwd") == str(
                cwd
            ):
                return True
        except OSError:
            continue
    return False


def test_a_stream_cut_mid_call_resumes_with_the_result(tmp_path: Path) -> None:
    path, token = token_file(tmp_path)
    args = ["--sandbox", "danger-full-access", "--cwd", str(tmp_path),
            "--http-token-file", str(path)]  # fmt: skip

    async def main(port: int) -> None:
        async with CuttingProxy(port).running() as proxy:
            # Through the proxy, but naming the front's own address (its Host rule).
            headers = {"Authorization": f"Bearer {token}", "Host": f"127.0.0.1:{port}"}
            async with create_mcp_http_client(headers=headers) as http:
                transport = streamable_http_client(
                    f"http://127.0.0.1:{proxy.port}/mcp", http_client=http
                )
                async with Client(transport, mode="legacy") as client:
                    assert client.protocol_version == "2025-11-25"
                    cuts: list[int] = []

                    async def cut_once_started() -> None:
                        await eventually_async(
                            lambda: _running_in(tmp_path, [b"sleep", b"2"]), "the call's command", 30
                        )
                        cuts.append(proxy.cut(b'"tools/call"'))

                    async with anyio.create_task_group() as tasks:
                        tasks.start_soon(cut_once_started)
                        with anyio.fail_after(30):
                            result = await client.call_tool(
                                "exec_command",
                                {"cmd": "sleep 2; echo done", "yield_time_ms": 10000},
                            )
        assert cuts == [1], cuts  # the call's own stream was cut, once
        text = text_of(result)
        assert "Process exited with code 0" in text and "done" in text, text
        # The result came on a resumed stream: a GET naming the last event it had.
        assert any(b"last-event-id: " in link.sent.lower() for link in proxy.links)

    with http_server(args) as (_, port):
        anyio.run(main, port)
