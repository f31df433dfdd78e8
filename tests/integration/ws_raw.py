"""A WebSocket opening handshake and frames over a plain socket, every header chosen by the test.

No shellgate imports: what an attacker's client sends (a missing or foreign Host, Origin or
token, frames right behind the request), against whatever listener is on the port.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os

REPLY_TIMEOUT_S = 10


def handshake(
    port: int, *, token: str | None = None, host: str | None = None, origin: str | None = None,
    path: str = "/",
) -> bytes:  # fmt: skip
    """An opening-handshake request with exactly these headers (Host defaults to ours)."""
    lines = [f"GET {path} HTTP/1.1", f"Host: {f'127.0.0.1:{port}' if host is None else host}",
             "Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Version: 13",
             f"Sec-WebSocket-Key: {base64.b64encode(os.urandom(16)).decode()}"]  # fmt: skip
    if token is not None:
        lines.append(f"Authorization: Bearer {token}")
    if origin is not None:
        lines.append(f"Origin: {origin}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def raw_request(port: int, request: bytes, then: bytes = b"") -> tuple[int, bytes]:
    """Send `request` (and `then` right behind it); the status and the answer (0: cut off)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(request + then)
        with contextlib.suppress(ConnectionError):
            await writer.drain()
        async with asyncio.timeout(REPLY_TIMEOUT_S):
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                return 0, b""
            if not head.startswith(b"HTTP/1.1 101"):
                with contextlib.suppress(ConnectionError):
                    head += await reader.read()
        return int(head.split(b" ", 2)[1]), head
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


def text_frame(payload: bytes) -> bytes:
    """One masked client text frame carrying `payload` (RFC 6455 §5.2, zero mask)."""
    size = len(payload)
    if size < 126:
        header = bytes([0x81, 0x80 | size])
    elif size < 1 << 16:
        header = bytes([0x81, 0x80 | 126]) + size.to_bytes(2, "big")
    else:
        header = bytes([0x81, 0x80 | 127]) + size.to_bytes(8, "big")
    return header + b"\0\0\0\0" + payload  # a zero mask leaves the payload as it is
