"""`[[environments]]` entries, the dial settings every daemon has, and how a channel to a
daemon is made (TLS by default)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path

import grpc
import grpc.aio
from shellgate.common.local_token import read_local_token

__all__ = [
    "DialSettings", "RemoteConfig", "is_loopback_target", "local_daemon_token", "make_channel",
    "read_token",
]  # fmt: skip


@dataclass(frozen=True)
class DialSettings:
    """How the router dials a daemon: plaintext or TLS, its bearer token, timeouts (ms).

    The same for a configured daemon (`[[environments]]`) and a discovered one
    (`[[discovery]]`); both tables keep these keys at their own level (ROUTER_TABLE
    flattens them).
    """

    insecure: bool = False
    # The CA that signed the daemon's certificate (empty: the system roots), this router's
    # client certificate and key (mTLS), and the name checked against the daemon's
    # certificate (empty: the target's host).
    tls_ca_file: str = ""
    tls_cert_file: str = ""
    tls_key_file: str = ""
    tls_server_name: str = ""
    token_file: str = ""
    connect_timeout_ms: int = 10_000
    call_timeout_ms: int = 30_000

    @property
    def has_tls_files(self) -> bool:
        """Whether any TLS file is configured."""
        return bool(self.tls_ca_file or self.tls_cert_file or self.tls_key_file)


@dataclass(frozen=True)
class RemoteConfig:
    """One `[[environments]]` entry: target, how it is dialled, buffers and reconnects.

    Secure by default: plaintext only with `insecure = true`, or for a loopback target
    when no TLS file is configured; otherwise TLS, with the system roots when no CA file.
    """

    environment_id: str
    target: str
    dial: DialSettings = DialSettings()
    # Output of one process received from the daemon but not yet taken by its consumer;
    # past it the router stops reading that stream, so gRPC flow control and the daemon's
    # retention/pacing hold the process back (as much as a local process buffers).
    output_buffer_bytes: int = 1024 * 1024
    # After a failed connect calls fail fast (circuit open) while the router reconnects in
    # the background: first retry after the initial backoff, doubling up to the maximum.
    reconnect_initial_backoff_ms: int = 500
    reconnect_max_backoff_ms: int = 30_000
    # Who decides this environment's approvals ("caller" | "operator"; empty: the
    # router's `[approvals] default_route`); an operator route here binds every turn.
    approval_route: str = ""

    @property
    def plaintext(self) -> bool:
        """Whether the channel is plaintext (see the class docstring)."""
        if self.dial.insecure:
            return True
        return not self.dial.has_tls_files and is_loopback_target(self.target)


def _target_host(target: str) -> str:
    """The host of a gRPC target (`host:port`, `[v6]:port`, `dns:///host:port`, `ipv4:…`)."""
    text = target
    for scheme in ("dns:", "ipv4:", "ipv6:"):
        if text.startswith(scheme):
            text = text[len(scheme) :]
            # dns://authority/host:port: the authority is the resolver, not the target.
            if text.startswith("//"):
                text = text[2:].split("/", 1)[-1]
            break
    if text.startswith("["):
        return text[1:].split("]", 1)[0]
    if text.count(":") > 1:
        # A bare IPv6 address without a port.
        return text
    return text.rsplit(":", 1)[0] if ":" in text else text


def is_loopback_target(target: str) -> bool:
    """True for unix sockets, `localhost` and loopback addresses."""
    if target.startswith(("unix:", "unix-abstract:")):
        return True
    host = _target_host(target).lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def read_token(path: str) -> str:
    """The bearer token of a token file (the last word of its first non-comment line)."""
    for line in Path(path).read_text().splitlines():
        text = line.strip()
        if text and not text.startswith("#"):
            return text.split()[-1]
    raise ValueError(f"{path}: no token")


def local_daemon_token(config: RemoteConfig) -> str | None:
    """The token a daemon of this user on a loopback target generated (read per call: the
    daemon may start, or restart with a new token, after the router)."""
    if config.dial.token_file or not is_loopback_target(config.target):
        return None
    port = config.target.rpartition(":")[2]
    return read_local_token("execserver", int(port)) if port.isdigit() else None


def make_channel(config: RemoteConfig) -> grpc.aio.Channel:
    """A channel to the daemon: plaintext only when `config.plaintext`, else TLS."""
    if config.plaintext:
        return grpc.aio.insecure_channel(config.target)
    dial = config.dial
    root = Path(dial.tls_ca_file).read_bytes() if dial.tls_ca_file else None
    key = Path(dial.tls_key_file).read_bytes() if dial.tls_key_file else None
    cert = Path(dial.tls_cert_file).read_bytes() if dial.tls_cert_file else None
    # root=None: gRPC uses the system roots.
    creds = grpc.ssl_channel_credentials(root, key, cert)
    options = []
    if dial.tls_server_name:
        options.append(("grpc.ssl_target_name_override", dial.tls_server_name))
    return grpc.aio.secure_channel(config.target, creds, options=options)
