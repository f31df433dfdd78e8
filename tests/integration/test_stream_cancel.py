"""A cancelled server stream closes its handler at once (common/boundary.streaming).

grpc's loop over an async-generator handler does not close the generator when the client
cancels while a write waits on flow control: the handler's `finally` (which cancels the
call, kills its group, withdraws its approval) then runs only when the generator is
collected. A real aio server on loopback, a client that stops reading and cancels.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc
from shellgate.common.boundary import streaming

SERVICE = "shellgate.test.Flood"


class _Flood:
    def __init__(self) -> None:
        self.closed = asyncio.Event()
        self.writes = 0
        # Someone else still holding the generator (a cycle, a log record, a debugger):
        # its cleanup must not wait for the collector.
        self.held: list[AsyncIterator[bytes]] = []

    @streaming
    def Flood(self, request: bytes, context: object) -> AsyncIterator[bytes]:
        messages = self._messages()
        self.held.append(messages)
        return messages

    async def _messages(self) -> AsyncIterator[bytes]:
        try:
            while True:
                self.writes += 1
                yield b"x" * 65_536
        finally:
            self.closed.set()


def test_a_stream_cancelled_while_its_write_waits_closes_the_handler_at_once() -> None:
    async def main() -> None:
        flood = _Flood()
        handler = grpc.method_handlers_generic_handler(
            SERVICE, {"Flood": grpc.unary_stream_rpc_method_handler(flood.Flood)}
        )
        server = grpc.aio.server()
        server.add_generic_rpc_handlers((handler,))
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                call = channel.unary_stream(f"/{SERVICE}/Flood")(b"", timeout=30)
                assert await call.read() == b"x" * 65_536
                # The client reads no more: the server's writes stop on flow control.
                stalled_at = -1
                while stalled_at != flood.writes:
                    stalled_at = flood.writes
                    await asyncio.sleep(0.3)
                assert not flood.closed.is_set()
                call.cancel()
                await asyncio.wait_for(flood.closed.wait(), 5)
        finally:
            await server.stop(0)

    asyncio.run(main())
