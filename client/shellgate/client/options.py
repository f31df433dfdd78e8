"""Connection settings: target, TLS/mTLS, bearer token, timeouts, keepalive and retries."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

import grpc
from shellgate.client.local_token import local_token_for

__all__ = [
    "DEFAULT_TARGET",
    "DEFAULT_UNARY_TIMEOUT_S",
    "IDEMPOTENT_METHODS",
    "ClientOptions",
    "TlsOptions",
    "aio_channel",
    "merge_options",
    "service_config",
    "sync_channel",
    "token_from_file",
]

DEFAULT_TARGET = "127.0.0.1:50051"
# Unary RPCs answer from router state (no process runs inside them), so a generous but
# finite deadline catches a hung or unreachable router.
DEFAULT_UNARY_TIMEOUT_S = 30.0
# The router's own limit for a message is the grpc default (4 MiB); projections of large
# scripts and long outputs stay well below it, but allow headroom on receive.
DEFAULT_MAX_RECEIVE_BYTES = 64 * 1024 * 1024
# An Execute stream can stay quiet for minutes (a long build, an approval wait): keepalive
# pings keep NATs and load balancers from dropping the connection and notice a dead peer.
# Not below the router's `connections.min_ping_interval_ms` (60 s by default), which counts
# closer pings as abuse and closes the connection.
DEFAULT_KEEPALIVE_TIME_S = 60.0
DEFAULT_KEEPALIVE_TIMEOUT_S = 20.0
# Attempts (first try included) of an idempotent unary RPC that fails UNAVAILABLE.
DEFAULT_RETRY_ATTEMPTS = 4
_SERVICE = "shellgate.v1.ToolRouterService"
# Unary RPCs that only read (or, like Project, compute): running one twice changes nothing.
# Execute, Interrupt, TerminateSession and EndThread act, so gRPC never retries them here.
IDEMPOTENT_METHODS = ("ListTools", "Project", "ListEnvironments", "ListSessions", "GetServerInfo")


def service_config(retry_attempts: int) -> str:
    """gRPC service config JSON: a retry policy (UNAVAILABLE, backoff) for the idempotent RPCs."""
    if retry_attempts <= 1:
        return json.dumps({"methodConfig": []})
    policy = {
        "maxAttempts": retry_attempts,
        "initialBackoff": "0.2s",
        "maxBackoff": "3s",
        "backoffMultiplier": 2,
        "retryableStatusCodes": ["UNAVAILABLE"],
    }
    names = [{"service": _SERVICE, "method": method} for method in IDEMPOTENT_METHODS]
    return json.dumps({"methodConfig": [{"name": names, "retryPolicy": policy}]})


@dataclass(frozen=True)
class TlsOptions:
    """Server verification (CA) and, for mTLS, the client's certificate and key (PEM files)."""

    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    # Name to verify in the server certificate when it differs from the target host.
    server_name: str | None = None

    def credentials(self) -> grpc.ChannelCredentials:
        """Channel credentials; without ca_file the system roots verify the server."""
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("mTLS needs both cert_file and key_file")
        root = Path(self.ca_file).read_bytes() if self.ca_file else None
        key = Path(self.key_file).read_bytes() if self.key_file else None
        cert = Path(self.cert_file).read_bytes() if self.cert_file else None
        return grpc.ssl_channel_credentials(root, key, cert)


@dataclass(frozen=True)
class ClientOptions:
    """Everything a client needs to reach a router."""

    target: str = DEFAULT_TARGET
    # None: plaintext channel (loopback routers); set: TLS, with mTLS when it holds a cert.
    tls: TlsOptions | None = None
    # Sent as `authorization: Bearer <token>` on every call.
    token: str | None = field(default=None, repr=False)
    # Deadline of every unary RPC.
    unary_timeout_s: float = DEFAULT_UNARY_TIMEOUT_S
    # Deadline of an Execute stream; None leaves it unbounded on the client side because the
    # command's own timeout (shell_command) or yield time (exec_command) bounds the stream.
    execute_timeout_s: float | None = None
    max_receive_bytes: int = DEFAULT_MAX_RECEIVE_BYTES
    # HTTP/2 keepalive pings on an otherwise quiet connection; None turns them off.
    keepalive_time_s: float | None = DEFAULT_KEEPALIVE_TIME_S
    keepalive_timeout_s: float = DEFAULT_KEEPALIVE_TIMEOUT_S
    # 1 turns retries off; gRPC retries only IDEMPOTENT_METHODS, and only on UNAVAILABLE.
    retry_attempts: int = DEFAULT_RETRY_ATTEMPTS
    # Execute streams ask for coalescing (ExecuteRequest.coalesce_ms): events arriving within
    # this many milliseconds come in one message (the client hands them out one by one).
    # 0 keeps one event per message.
    coalesce_ms: int = 0

    def metadata(self) -> tuple[tuple[str, str], ...]:
        """Per-call metadata: the bearer token when one is set."""
        return (("authorization", f"Bearer {self.token}"),) if self.token else ()

    def channel_options(self) -> list[tuple[str, str | int]]:
        """grpc channel arguments."""
        options: list[tuple[str, str | int]] = [
            ("grpc.max_receive_message_length", self.max_receive_bytes),
            ("grpc.enable_retries", 1),
            ("grpc.service_config", service_config(self.retry_attempts)),
        ]
        if self.keepalive_time_s is not None:
            options += [
                ("grpc.keepalive_time_ms", int(self.keepalive_time_s * 1000)),
                ("grpc.keepalive_timeout_ms", int(self.keepalive_timeout_s * 1000)),
                # Keep pinging through a stream that sends nothing (the default stops at 2).
                ("grpc.http2.max_pings_without_data", 0),
                # No pings without a call: the router counts those as strikes.
                ("grpc.keepalive_permit_without_calls", 0),
            ]
        if self.tls is not None and self.tls.server_name:
            options.append(("grpc.ssl_target_name_override", self.tls.server_name))
        return options


def token_from_file(path: str) -> str:
    """Read a bearer token from a file (first non-empty, non-comment line)."""
    for line in Path(path).read_text().splitlines():
        text = line.strip()
        if text and not text.startswith("#"):
            return text
    raise ValueError(f"{path}: no token")


def aio_channel(options: ClientOptions) -> grpc.aio.Channel:
    """An asyncio channel for the options."""
    if options.tls is None:
        return grpc.aio.insecure_channel(options.target, options=options.channel_options())
    return grpc.aio.secure_channel(
        options.target, options.tls.credentials(), options=options.channel_options()
    )


def sync_channel(options: ClientOptions) -> grpc.Channel:
    """A blocking channel for the options."""
    if options.tls is None:
        return grpc.insecure_channel(options.target, options=options.channel_options())
    return grpc.secure_channel(
        options.target, options.tls.credentials(), options=options.channel_options()
    )


def merge_options(
    options: ClientOptions | None,
    *,
    target: str | None = None,
    tls: TlsOptions | None = None,
    token: str | None = None,
) -> ClientOptions:
    """`options` (or the defaults) with the given keyword values put over it."""
    merged = options or ClientOptions()
    if target is not None:
        merged = replace(merged, target=target)
    if tls is not None:
        merged = replace(merged, tls=tls)
    if token is not None:
        merged = replace(merged, token=token)
    if merged.token is None:
        # A local `shellgate serve` publishes a token only its user can read (loopback only).
        merged = replace(merged, token=local_token_for(merged.target))
    return merged
