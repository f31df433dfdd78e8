"""Connection settings: target, TLS/mTLS, bearer token and per-call timeouts."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import grpc
from shellgate.client.local_token import local_token_for

__all__ = [
    "DEFAULT_TARGET",
    "DEFAULT_UNARY_TIMEOUT_S",
    "ClientOptions",
    "TlsOptions",
    "aio_channel",
    "merge_options",
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

    def metadata(self) -> tuple[tuple[str, str], ...]:
        """Per-call metadata: the bearer token when one is set."""
        return (("authorization", f"Bearer {self.token}"),) if self.token else ()

    def channel_options(self) -> list[tuple[str, str | int]]:
        """grpc channel arguments."""
        options: list[tuple[str, str | int]] = [
            ("grpc.max_receive_message_length", self.max_receive_bytes),
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
