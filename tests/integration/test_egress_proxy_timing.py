"""The egress proxy in process, on its unix socket: only a request's head is time-bound.

Real asyncio servers on loopback; the bounds are shortened for the test (the module's
constants), so a slow answer that outlives them shows they bound the head alone.
"""

from __future__ import annotations

import asyncio

import pytest
from shellgate.common.egress import proxy as proxy_module
from shellgate.common.egress.policy import NetworkPolicy
from shellgate.common.egress.proxy import EgressProxy
from shellgate.common.egress.routes import Route

ORIGIN = "127.0.0.2"


async def _slow_origin() -> tuple[asyncio.AbstractServer, int]:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nfirst ")
        await writer.drain()
        await asyncio.sleep(1.5)  # past the (shortened) head timeout
        writer.write(b"and last")
        writer.close()

    server = await asyncio.start_server(answer, ORIGIN, 0)
    return server, server.sockets[0].getsockname()[1]


async def _scenario() -> tuple[bytes, bytes]:
    server, port = await _slow_origin()
    proxy = EgressProxy()
    path, route = proxy.add_route(Route(NetworkPolicy(True, allowed_domains=(ORIGIN,))))
    try:
        reader, writer = await asyncio.open_unix_connection(path)
        writer.write(f"{route}\nGET http://{ORIGIN}:{port}/ HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        answer = await asyncio.wait_for(reader.read(), 10)
        writer.close()
        # A connection that names its route and then says nothing is closed at the bound.
        stalled_reader, stalled = await asyncio.open_unix_connection(path)
        stalled.write(f"{route}\nGET http://{ORIGIN}".encode())
        rest = await asyncio.wait_for(stalled_reader.read(), 10)
        stalled.close()
        return answer, rest
    finally:
        await proxy.aclose()
        server.close()
        await server.wait_closed()


def test_only_the_head_is_time_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(proxy_module, "_HEAD_TIMEOUT_S", 0.5)
    answer, stalled = asyncio.run(_scenario())
    assert answer.endswith(b"\r\n\r\nfirst and last"), answer
    assert stalled == b""
