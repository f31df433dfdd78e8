"""Every bound of the exec-server, named with its unit and defaulted; TOML loading."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from shellgate.common.config_schema import (
    ConfigError,
    ListenAddress,
    OptionalListenAddress,
    Port,
    PositiveInt,
    model_of,
    read_toml,
    validate_table,
)
from shellgate.common.egress.config import NETWORK_TABLE, NetworkConfig
from shellgate.common.grpc.connections import CONNECTIONS_TABLE, ConnectionLimits
from shellgate.common.grpc.listen import is_loopback_host
from shellgate.common.process.limits import MIB, ProcessLimits

__all__ = ["MIB", "ConfigError", "ProcessLimits"]  # re-exported: configs name them


@dataclass(frozen=True)
class SshConfig:
    """The SSH backend's target and its timeouts (all always set)."""

    host: str = ""
    port: int = 22
    user: str = ""
    key_file: str = ""
    # Pinned host keys; empty means refuse (no trust on first use).
    known_hosts_file: str = ""
    connect_timeout_ms: int = 10_000
    keepalive_interval_ms: int = 15_000
    keepalive_count_max: int = 3
    pool_size: int = 4
    channels_per_connection: int = 8


@dataclass(frozen=True)
class CodexWsLimits:
    """The Codex WebSocket listener (`--codex-listen`): the names it answers to, its bounds."""

    # Names the listener may be reached by (the Host header), besides its bind address and,
    # on loopback, every loopback spelling: any other Host is refused (DNS rebinding).
    hosts: tuple[str, ...] = ()
    # A connection that has not finished its opening handshake (and TLS) by then is closed.
    handshake_timeout_ms: int = 5_000
    # Connections open at once, and of those not yet authenticated; past either: 503.
    max_connections: int = 64
    max_unauthenticated: int = 16


@dataclass(frozen=True)
class ServerConfig:
    """Daemon configuration: listener, credentials, table bounds, retention.

    `listen` must be loopback unless TLS is configured or `insecure` is set. `health_listen`
    (a second, plaintext port serving only grpc.health.v1) may be any address: it reveals
    only whether the daemon is serving, so it needs neither TLS nor `insecure`.
    """

    listen: str = "127.0.0.1:0"
    insecure: bool = False
    # Plaintext listener serving only grpc.health.v1 (same statuses as the main port), for
    # Kubernetes native `grpc:` probes, which cannot speak TLS; empty = none. Any host is
    # allowed without TLS or `insecure` (unlike `listen`): it exposes nothing but
    # SERVING / NOT_SERVING, no ExecService and no reflection.
    health_listen: str = ""
    # GET /metrics (Prometheus) on its own listener; empty = off. A non-loopback address
    # needs metrics_token_file (bearer token, first line) or metrics TLS (not `insecure`).
    metrics_listen: str = ""
    metrics_token_file: str = ""
    metrics_tls_cert_file: str = ""
    metrics_tls_key_file: str = ""
    # OTLP/gRPC collector for OpenTelemetry traces (`shellgate[otel]`); empty = no tracing.
    otel_endpoint: str = ""
    tls_cert_file: str = ""
    tls_key_file: str = ""
    # Client CA for mTLS; when set, clients must present a certificate it signed.
    tls_client_ca_file: str = ""
    token_file: str = ""
    # With no token_file and no mTLS on loopback, generate a random token readable only by
    # this user (shellgate.common.local_token); false trusts every local user.
    local_token: bool = True
    backend: str = "local"
    # Unprivileged user the local backend's commands run as (empty: the daemon's own).
    run_as: str = ""
    ssh: SshConfig = field(default_factory=SshConfig)
    codex_ws: CodexWsLimits = field(default_factory=CodexWsLimits)
    # Idle/half-open connection reaping and the connection cap (docs/configuration.md).
    connections: ConnectionLimits = field(default_factory=ConnectionLimits)
    # Root for relative cwds and GetInfo's cwd; empty = the daemon's own cwd.
    root: str = ""
    process: ProcessLimits = field(default_factory=ProcessLimits)
    retained_bytes: int = MIB
    exited_retention_ms: int = 30_000
    owner_ttl_ms: int = 30 * 60_000
    idempotency_ttl_ms: int = 5 * 60_000
    sweep_interval_ms: int = 1_000
    # After a process exits, output may flow this long (a background grandchild holding
    # the pipes) before the streams are cut and `closed` is emitted; a non-detached
    # process's group is then killed (the classic 2 s drain, spec 05 §1.3).
    exit_drain_ms: int = 2_000
    # Hard bound of that drain, even while a slow but live Start stream is still receiving
    # output queued before the exit (time spent waiting for it does not count above).
    exit_drain_cap_ms: int = 60_000
    # An attached stream (Start, Attach, Codex `process/output`) holds its process back
    # rather than lose output. 0 (default): for as long as it takes. > 0: after this long
    # without progress, retention evicts what it did not deliver (SLOW_CONSUMER gap).
    slow_consumer_stall_ms: int = 0
    max_processes_per_caller: int = 64
    max_processes_total: int = 256
    max_argv_items: int = 4_096
    max_argv_bytes: int = MIB
    max_env_entries: int = 4_096
    max_env_bytes: int = MIB
    max_write_bytes: int = MIB
    max_read_wait_ms: int = 60_000
    max_read_bytes: int = 4 * MIB
    max_file_bytes: int = 64 * MIB
    max_message_bytes: int = 80 * MIB
    max_owner_chars: int = 256
    max_pty_rows: int = 1_000
    max_pty_cols: int = 1_000
    shutdown_grace_ms: int = 5_000
    # More files or folders every local sandbox shows empty, beside the credentials named
    # here (secret_files) and the token folders (shellgate.common.sandbox_masks).
    masked_paths: tuple[str, ...] = ()
    # This daemon's egress policy for its sandboxed commands (docs/sandbox.md "Egress").
    network: NetworkConfig = field(default_factory=NetworkConfig)
    # The file this configuration was read from (empty: none); set by load_config.
    source_file: str = ""

    def wants_local_token(self) -> bool:
        """Whether start-up generates and publishes a local token (the safe default)."""
        host = self.listen.rpartition(":")[0]
        return (
            self.local_token
            and not self.token_file
            and not self.tls_client_ca_file
            and is_loopback_host(host)
        )

    def secret_files(self) -> tuple[str, ...]:
        """Files that hold the daemon's credentials (and masked_paths), masked in every sandbox."""
        files = (
            self.source_file, self.token_file, self.tls_key_file, self.ssh.key_file,
            self.metrics_token_file, self.metrics_tls_key_file, *self.masked_paths,
        )  # fmt: skip
        return tuple(dict.fromkeys(f for f in files if f))


# The TOML boundary (shellgate.common.config_schema): ServerConfig's keys and defaults,
# with the backend an enum (case-sensitive) and the listen addresses checked.
SERVER_TABLE = model_of(
    ServerConfig,
    types={
        "backend": Literal["local", "ssh"],
        "listen": ListenAddress,
        "health_listen": OptionalListenAddress,
        "metrics_listen": OptionalListenAddress,
        "connections": CONNECTIONS_TABLE,
        "network": NETWORK_TABLE,
        "codex_ws": model_of(
            CodexWsLimits,
            types={
                name: PositiveInt
                for name in ("handshake_timeout_ms", "max_connections", "max_unauthenticated")
            },
        ),
        "ssh": model_of(
            SshConfig,
            types={"port": Port, "pool_size": PositiveInt, "channels_per_connection": PositiveInt},
        ),
        # A zero read or buffer size would stall every process's output.
        "process": model_of(
            ProcessLimits,
            types={
                name: PositiveInt
                for name in (
                    "read_chunk_bytes",
                    "max_chunk_bytes",
                    "pipe_buffer_bytes",
                    "output_buffer_bytes",
                    "output_queue_chunks",
                )
            },
        ),
    },
    skip=("source_file",),
)


def parse_config(
    data: Mapping[str, Any], flags: Mapping[str, str] | None = None
) -> ServerConfig:
    """A ServerConfig from parsed TOML data (and flags); ConfigError names the key."""
    config: ServerConfig = validate_table(SERVER_TABLE, data, flags).domain()
    if bool(config.tls_cert_file) != bool(config.tls_key_file):
        key = "tls_key_file" if config.tls_cert_file else "tls_cert_file"
        raise ConfigError(key, "tls_cert_file and tls_key_file must be set together")
    if config.backend == "ssh" and not config.ssh.host:
        raise ConfigError("ssh.host", 'required with backend = "ssh"')
    if config.network.enabled and config.backend != "local":
        # The proxy's socket is on this host; an SSH host's sandbox cannot reach it.
        raise ConfigError("network.enabled", 'egress control needs backend = "local"')
    config.network.policy()  # a deny-list `*` is refused here, with its key
    return config


def check_root(config: ServerConfig, flag: str = "") -> None:
    """Refuse a local `root` that is not a directory (every command would fail to start).

    Checked at start-up, not at parse (a config names its deployment's paths, as
    `check_rules_dirs` does for the router); `flag` names the flag when it set the root.
    With the SSH backend the remote reports its own cwd, so nothing local is checked.
    """
    if config.root and config.backend == "local" and not Path(config.root).is_dir():
        raise ConfigError(flag or "root", "no such directory", got=config.root)


def load_config(
    path: str | None,
    overrides: dict[str, Any] | None = None,
    flags: Mapping[str, str] | None = None,
) -> ServerConfig:
    """Read TOML (when given) and apply flag overrides on top; ConfigError names the key."""
    table: dict[str, Any] = read_toml(path) if path else {}
    given = {k: v for k, v in (overrides or {}).items() if v is not None}
    table.update(given)
    config = parse_config(table, {k: f for k, f in (flags or {}).items() if k in given})
    return dataclasses.replace(config, source_file=str(Path(path).resolve())) if path else config
