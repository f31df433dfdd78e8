"""Codex exec-server protocol over stdio: NDJSON, one message per line; stdout holds frames only.

For `environments.toml` `program` entries (`ssh buildhost shellgate-execserver codex-stdio`):
the spawning side owns the pipe, so there is no network auth; EOF on stdin ends the session
and kills its processes.
"""

from __future__ import annotations

import asyncio
import json
import sys
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


async def serve_stdio(
    ctx: CodexContext, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None
) -> None:
    """Serve one session on stdin/stdout until stdin closes."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_MESSAGE_BYTES)
    await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), stdin or sys.stdin.buffer
    )
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, stdout or sys.stdout.buffer
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)

    async def send(message: Message | Encoded) -> None:
        # One write per whole line: lines never interleave.
        writer.write(encode(message) + b"\n")
        await writer.drain()

    session = CodexSession(ctx, STDIO_CALLER, send)
    try:
        while line := await reader.readline():
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
        writer.close()
