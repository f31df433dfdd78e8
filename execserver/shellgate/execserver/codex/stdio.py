"""Codex exec-server protocol over stdio: NDJSON, one message per line; stdout holds frames only.

For `environments.toml` `program` entries (`ssh buildhost shellgate-execserver codex-stdio`):
the spawning side owns the pipe, so there is no network auth; EOF on stdin ends the session
and kills its processes.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys
from collections.abc import Awaitable, Callable
from typing import BinaryIO

from shellgate.execserver.codex.protocol import CodexContext, CodexSession
from shellgate.execserver.codex.wire import (
    PARSE_ERROR,
    Encoded,
    Message,
    RpcError,
    encode,
    error_response,
)
from shellgate.execserver.codex.ws import MAX_MESSAGE_BYTES

STDIO_CALLER = "codex-stdio"


def _is_pipe_like(stream: BinaryIO) -> bool:
    """Whether asyncio can watch `stream` (a pipe, socket or terminal, not a regular file)."""
    mode = os.fstat(stream.fileno()).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


async def _line_reader(stream: BinaryIO) -> Callable[[], Awaitable[bytes]]:
    """`readline` for stdin; a regular file (`< requests.ndjson`) is read in a thread."""
    if not _is_pipe_like(stream):
        return lambda: asyncio.to_thread(stream.readline, MAX_MESSAGE_BYTES)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_MESSAGE_BYTES)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stream)
    return reader.readline


async def _line_writer(
    stream: BinaryIO,
) -> tuple[Callable[[bytes], Awaitable[None]], Callable[[], None]]:
    """(write one line, close) for stdout; a regular file (`> out.ndjson`) is written in a
    thread, one whole line at a time."""
    if not _is_pipe_like(stream):
        lock = asyncio.Lock()

        def write_sync(data: bytes) -> None:
            stream.write(data)
            stream.flush()

        async def write_file(data: bytes) -> None:
            async with lock:  # lines never interleave
                await asyncio.to_thread(write_sync, data)

        return write_file, lambda: None
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, stream)
    writer = asyncio.StreamWriter(transport, protocol, None, loop)

    async def write_pipe(data: bytes) -> None:
        writer.write(data)
        await writer.drain()

    return write_pipe, writer.close


async def serve_stdio(
    ctx: CodexContext, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None
) -> None:
    """Serve one session on stdin/stdout until stdin closes."""
    readline = await _line_reader(stdin or sys.stdin.buffer)
    write, close = await _line_writer(stdout or sys.stdout.buffer)

    async def send(message: Message | Encoded) -> None:
        # One write per whole line: lines never interleave.
        await write(encode(message) + b"\n")

    session = CodexSession(ctx, STDIO_CALLER, send)
    try:
        while line := await readline():
            if not line.strip():
                continue  # blank lines are ignored, as by Codex's own server
            try:
                message = json.loads(line)
            except ValueError:
                await send(error_response(None, RpcError(PARSE_ERROR, "parse error")))
                continue
            await session.receive(message)
    finally:
        await session.close()
        close()
