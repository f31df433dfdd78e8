"""The gRPC server both daemons serve from: bounds, request guard, health, reflection, listener.

The router and the exec-server differ only in what they pass in: their services, message
sizes and listen address, and the TLS credentials their configuration asks for. Everything
else is the same for both: the connection bounds of `connections.py` within the raised
descriptor limit, the wire guard counting calls per peer, an exclusive port
(`listen.py`), `grpc.health.v1` and reflection v1/v1alpha listing the services then Health.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import grpc
import grpc.aio
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1._async import HealthServicer
from shellgate.common.grpc.connections import (
    ConnectionLimits,
    PeerCalls,
    raise_nofile_limit,
    server_options,
)
from shellgate.common.grpc.listen import EXCLUSIVE_PORT_OPTIONS, bind
from shellgate.common.grpc.reflection import enable_reflection
from shellgate.common.grpc.wire_guard import DecodeGuardInterceptor

__all__ = ["HEALTH_SERVICE_NAME", "BuiltServer", "ServerTls", "Service", "build_server"]

HEALTH_SERVICE_NAME: str = health_pb2.DESCRIPTOR.services_by_name["Health"].full_name


@dataclass(frozen=True)
class ServerTls:
    """A listener's certificate and key; a client CA makes it mTLS (certificate required)."""

    cert_file: str
    key_file: str
    client_ca_file: str = ""

    def credentials(self) -> grpc.ServerCredentials:
        """The server credentials, the files read now (OSError names an unreadable one)."""
        key = Path(self.key_file).read_bytes()
        cert = Path(self.cert_file).read_bytes()
        client_ca = Path(self.client_ca_file).read_bytes() if self.client_ca_file else None
        return grpc.ssl_server_credentials(
            [(key, cert)], root_certificates=client_ca, require_client_auth=client_ca is not None
        )


@dataclass(frozen=True)
class Service:
    """One service of a daemon: its full name (listed by reflection) and how it is added."""

    name: str
    add: Callable[[grpc.aio.Server], None]


@dataclass(frozen=True)
class BuiltServer:
    """A bound server, not started yet, with its health servicer and bound port."""

    server: grpc.aio.Server
    health: HealthServicer
    port: int


def build_server(
    *,
    services: Sequence[Service],
    listen: str,
    credentials: grpc.ServerCredentials | None,
    connections: ConnectionLimits,
    max_receive_bytes: int,
    max_send_bytes: int,
) -> BuiltServer:
    """Build the server, add `services`, health and reflection, and bind `listen`.

    `credentials` None listens in plaintext. ValueError names an out-of-range connection
    bound; ListenError (an OSError) names an address that cannot be bound.
    """
    connections.validate()
    # Descriptors bound the connections: take the hard limit, keep a reserve (connections.py).
    nofile = raise_nofile_limit()
    # Counts calls per peer address: connections.max_calls_per_peer (connections.py).
    guard = DecodeGuardInterceptor(peer_calls=PeerCalls(connections.max_calls_per_peer))
    server = grpc.aio.server(
        interceptors=[guard],
        options=[
            ("grpc.max_receive_message_length", max_receive_bytes),
            ("grpc.max_send_message_length", max_send_bytes),
            *EXCLUSIVE_PORT_OPTIONS,
            *server_options(connections, nofile),
        ],
    )
    for service in services:
        service.add(server)
    health = HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    enable_reflection((*(s.name for s in services), HEALTH_SERVICE_NAME), server)
    port = bind(server, listen, credentials)
    return BuiltServer(server, health, port)
