"""SOCKS5 (RFC 1928), server side, sans-I/O: the greeting, one CONNECT request, the replies.

Each parser takes the bytes read so far and returns None while they are incomplete, or what
it read and how many bytes that took; a malformed message raises `Socks5Error` with the
reply code to send. Only no-authentication and CONNECT are spoken (the proxy's route already
says who is asking; UDP ASSOCIATE and BIND are refused with "command not supported").
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass

VERSION = 5
NO_AUTH, NO_ACCEPTABLE = 0x00, 0xFF
CONNECT = 1
_IPV4, _DOMAIN, _IPV6 = 1, 3, 4
# Reply codes (RFC 1928 §6).
SUCCEEDED = 0x00
GENERAL_FAILURE = 0x01
NOT_ALLOWED = 0x02
HOST_UNREACHABLE = 0x04
CONNECTION_REFUSED = 0x05
COMMAND_NOT_SUPPORTED = 0x07
ADDRESS_NOT_SUPPORTED = 0x08


class Socks5Error(Exception):
    """A malformed or unsupported message; `reply` is the code to answer with."""

    def __init__(self, reply: int, message: str) -> None:
        super().__init__(message)
        self.reply = reply


@dataclass(frozen=True)
class Target:
    """Where a CONNECT asks to go: a name or an address literal, and a port."""

    host: str
    port: int


def parse_greeting(buf: bytes) -> tuple[bool, int] | None:
    """(whether no-authentication is offered, bytes used), or None while incomplete."""
    if len(buf) < 2:
        return None
    if buf[0] != VERSION:
        raise Socks5Error(GENERAL_FAILURE, f"not SOCKS5 (version {buf[0]})")
    end = 2 + buf[1]
    if len(buf) < end:
        return None
    return NO_AUTH in buf[2:end], end


def greeting_reply(accepted: bool) -> bytes:
    """The method selection: no authentication, or no acceptable method."""
    return bytes((VERSION, NO_AUTH if accepted else NO_ACCEPTABLE))


def parse_request(buf: bytes) -> tuple[Target, int] | None:
    """(the CONNECT target, bytes used), or None while incomplete."""
    if len(buf) < 5:
        return None
    version, command, _reserved, kind = buf[0], buf[1], buf[2], buf[3]
    if version != VERSION:
        raise Socks5Error(GENERAL_FAILURE, f"not SOCKS5 (version {version})")
    if kind == _IPV4:
        start, end = 4, 8
    elif kind == _IPV6:
        start, end = 4, 20
    elif kind == _DOMAIN:
        start, end = 5, 5 + buf[4]
    else:
        raise Socks5Error(ADDRESS_NOT_SUPPORTED, f"address type {kind}")
    if len(buf) < end + 2:
        return None
    if command != CONNECT:
        raise Socks5Error(COMMAND_NOT_SUPPORTED, f"command {command}")
    raw = buf[start:end]
    if kind == _DOMAIN:
        host = raw.decode("idna") if raw.isascii() else raw.decode("utf-8", "replace")
    else:
        host = str(ipaddress.ip_address(raw))
    (port,) = struct.unpack("!H", buf[end : end + 2])
    return Target(host, port), end + 2


def reply(code: int) -> bytes:
    """A reply to CONNECT; the bound address is not told (0.0.0.0:0)."""
    return bytes((VERSION, code, 0, _IPV4, 0, 0, 0, 0, 0, 0))
