"""Binding a gRPC listener exclusively, with one clear error when the address is taken.

grpcio sets SO_REUSEPORT on its listening sockets by default, so a second daemon started on
a busy port binds without error and the kernel splits connections between the two
processes. Every listener of both daemons turns that off (`EXCLUSIVE_PORT_OPTIONS`) and binds
through `bind`, which names the address in its refusal.
"""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import socket

import grpc
import grpc.aio

# A second process on the same port must fail, not share the connections.
EXCLUSIVE_PORT_OPTIONS: tuple[tuple[str, int], ...] = (("grpc.so_reuseport", 0),)


class ListenError(OSError):
    """The listen address cannot be bound (in use, not permitted, or not an address here)."""


def split_listen(listen: str) -> tuple[str, int]:
    """(host, port) of a `host:port` / `[v6]:port` address; ValueError when malformed."""
    host, sep, port_text = listen.rpartition(":")
    if not sep or not host or not port_text.isdigit() or int(port_text) > 65_535:
        raise ValueError(f"listen address {listen!r} must be host:port")
    return host, int(port_text)


def is_loopback_host(host: str) -> bool:
    """True for localhost and loopback IP addresses (brackets around IPv6 allowed)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind(
    server: grpc.aio.Server | grpc.Server,
    address: str,
    credentials: grpc.ServerCredentials | None = None,
) -> int:
    """Add the listening port; the bound port number, or ListenError naming the address."""
    try:
        host, port = split_listen(address)
    except ValueError as exc:
        raise ListenError(f"{exc} (port 0-65535)") from exc
    if port and not _bindable(host.strip("[]"), port):
        # Checked first so the refusal is one line of ours, not grpc core's log line too.
        raise ListenError(_refusal(address))
    try:
        port = (
            server.add_secure_port(address, credentials)
            if credentials is not None
            else server.add_insecure_port(address)
        )
    except RuntimeError as exc:  # grpcio ≥ 1.5x raises instead of returning 0
        raise ListenError(_refusal(address)) from exc
    if port == 0:
        raise ListenError(_refusal(address))
    return port


def _bindable(host: str, port: int) -> bool:
    """Whether `host:port` can be bound now as grpc would (no SO_REUSEPORT).

    An address in use (or forbidden) anywhere `host` resolves to refuses the whole bind:
    grpc would otherwise listen on the remaining ones and split clients with the other
    process. Addresses this host does not have (e.g. ::1 without IPv6) are skipped.
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError:
        return False
    bound = 0
    for family, kind, proto, _name, sockaddr in infos:
        try:
            probe = socket.socket(family, kind, proto)
        except OSError:
            continue
        with contextlib.closing(probe):
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(sockaddr)
            except OSError as exc:
                if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                    return False
                continue
            bound += 1
    return bound > 0


def _refusal(address: str) -> str:
    return (
        f"cannot listen on {address}: the address is in use by another process, "
        "not permitted, or not an address of this host"
    )
