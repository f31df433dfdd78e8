"""Router configuration: every setting defaulted so `shellgate serve` needs no file (TOML)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import Field
from shellgate.common.config_schema import (
    ConfigError,
    ListenAddress,
    NonNegativeInt,
    OptionalListenAddress,
    Port,
    PositiveInt,
    StrictModel,
    check_extra_listen,
    model_of,
    read_toml,
    validate_table,
)
from shellgate.common.egress.config import NETWORK_TABLE, NetworkConfig
from shellgate.common.grpc.connections import CONNECTIONS_TABLE, ConnectionLimits
from shellgate.common.grpc.health_listener import check_health_listen
from shellgate.common.grpc.listen import is_loopback_host
from shellgate.router.runtime.environments.remote.discovery import DnsDiscoveryConfig
from shellgate.router.runtime.environments.remote.environment import RemoteConfig
from shellgate.router.service.approvals_config import APPROVALS_TABLE, ApprovalsConfig
from shellgate.router.service.audit_config import AUDIT_TYPES, AuditSettings

__all__ = [
    "DEFAULT_LISTEN",
    "ConfigError",
    "Limits",
    "PolicyOptions",
    "RouterConfig",
    "TurnDefaults",
    "check_rules_dirs",
    "is_loopback_address",
    "load_config",
    "parse_config",
]

MIB = 1024 * 1024
DEFAULT_LISTEN = "127.0.0.1:50051"


@dataclass(frozen=True)
class TurnDefaults:
    """What an unset TurnContext field means."""

    approval_policy: str = "on-request"
    permission_profile: str = "workspace-write"
    shell_tool_type: str = "default"
    allow_login_shell: bool = True
    truncation_tokens: int = 10_000
    env_inherit: str = "all"
    env_ignore_default_excludes: bool = False
    env_exclude: tuple[str, ...] = ()
    env_set: tuple[tuple[str, str], ...] = ()
    env_include_only: tuple[str, ...] = ()


@dataclass(frozen=True)
class PolicyOptions:
    """`[policy]`: shellgate's options beyond Codex's exec policy (docs/rules.md)."""

    # Any script the rules cannot see through (it does not lower to plain words) needs
    # approval while some rule forbids; off: only such scripts that name a denied program.
    strict_unlowerable: bool = False


@dataclass(frozen=True)
class Limits:
    """Bounds on requests, state and concurrency (docs/limits.md: what crossing each answers).

    Every key is enforced and crossed by tests/integration/test_limits.py; a refusal carries
    the key in its ErrorInfo metadata `limit`.
    """

    max_concurrent_executes: int = 256
    # Execute slots one subject may hold; 0 = a fair share: max_concurrent_executes divided
    # by the subjects active now (alone, a subject may use every slot).
    max_concurrent_executes_per_subject: int = 0
    max_concurrent_projects: int = 2_048
    # Worker threads that project large items and reload rules (off the event loop).
    projection_workers: int = 2
    max_item_bytes: int = 4 * MIB
    max_message_bytes: int = 8 * MIB
    # Replies echo the script several times (argv, envelope, canonical command, display), so
    # a projection of a max_item_bytes script can be several times larger than the request.
    # Clients that project MiB scripts need a matching receive limit.
    max_send_message_bytes: int = 64 * MIB
    max_environments_per_turn: int = 16
    max_threads: int = 10_000
    # Live unified-exec sessions of this router, over all threads: past it exec_command
    # answers RESOURCE_EXHAUSTED (exited sessions are pruned first).
    max_unified_sessions: int = 1_024
    # Per thread, Codex's MAX_UNIFIED_EXEC_PROCESSES: storing one more prunes one (spec 05
    # §3.5), as Codex does; never a refusal.
    max_unified_sessions_per_thread: int = 64
    # Calls parked for approval, per thread and in all; past either a new call answers
    # RESOURCE_EXHAUSTED until approvals are answered, expire (approval_ttl_ms) or the
    # thread ends.
    max_pending_approvals_per_thread: int = 32
    max_pending_approvals: int = 1_024
    thread_idle_ttl_ms: int = 24 * 3600 * 1000
    approval_ttl_ms: int = 10 * 60 * 1000
    # How long a call's result answers a retry of its call_id (runtime/call/ledger.py).
    completed_call_ttl_ms: int = 10 * 60 * 1000
    # How long a call waits for a concurrency slot before RESOURCE_EXHAUSTED.
    admission_wait_ms: int = 50
    # How often idle threads and expired pending approvals are swept (and, with Redis, the
    # daemon owner TTL of live threads' shared sessions renewed).
    sweep_interval_ms: int = 30_000
    shutdown_grace_ms: int = 5_000


@dataclass(frozen=True)
class RouterConfig(AuditSettings):
    """The whole router configuration (the `audit_*` keys: AuditSettings).

    `listen` must be loopback unless TLS is configured or `insecure` is set. `health_listen`
    (a second, plaintext port serving only grpc.health.v1, for Kubernetes native `grpc:`
    probes, which cannot speak TLS) may be any address without TLS or `insecure`: it reveals
    only SERVING / NOT_SERVING, never the ToolRouterService or reflection.
    """

    listen: str = DEFAULT_LISTEN
    insecure: bool = False
    # Plaintext health-only listener (same statuses as the main port); empty = none.
    health_listen: str = ""
    # Project alone on a port of its own, answered by worker threads; empty = none.
    project_listen: str = ""
    tls_cert_file: str = ""
    tls_key_file: str = ""
    tls_client_ca_file: str = ""
    # `subject token` lines (as the exec-server's token file); empty = no token auth.
    token_file: str = ""
    # With no token_file and no mTLS on loopback, generate a random token readable only by
    # this user (shellgate.common.local_token); false trusts every local user.
    local_token: bool = True
    # subject -> environments it may use; a subject not listed may use every environment.
    client_environments: tuple[tuple[str, tuple[str, ...]], ...] = ()
    local_environment: bool = True
    local_cwd: str = ""
    local_shell: str = ""
    # Unprivileged user the embedded environment's commands run as (empty: the router's own).
    run_as: str = ""
    environments: tuple[RemoteConfig, ...] = ()
    rules_dirs: tuple[str, ...] = ()
    defaults: TurnDefaults = field(default_factory=TurnDefaults)
    limits: Limits = field(default_factory=Limits)
    # Idle/half-open connection reaping and the connection cap (docs/configuration.md).
    connections: ConnectionLimits = field(default_factory=ConnectionLimits)
    policy: PolicyOptions = field(default_factory=PolicyOptions)
    metrics_listen: str = ""
    # The metrics listener's own protection (docs/operations.md): a bearer-token file (first
    # line) and/or TLS; a non-loopback metrics_listen needs one of them.
    metrics_token_file: str = ""
    metrics_tls_cert_file: str = ""
    metrics_tls_key_file: str = ""
    # The operator web console (docs/console.md): its own HTTP listener, off when empty;
    # a non-loopback address needs console_tls_cert_file and console_tls_key_file.
    console_listen: str = ""
    console_tls_cert_file: str = ""
    console_tls_key_file: str = ""
    # Names the console may be reached by (the Host header), besides its listen address and,
    # on loopback, `localhost`: any other Host is refused (DNS rebinding).
    console_hosts: tuple[str, ...] = ()
    # A console login ends after this long without a request; at most this many at once.
    console_session_idle_ms: int = 30 * 60 * 1000
    console_max_sessions: int = 64
    # Shared thread state across router replicas; empty = in this process's memory.
    redis_url: str = ""
    # A file holding the whole Redis URL (password included), e.g. a mounted Kubernetes
    # Secret, so no credential sits in the configuration; exclusive with redis_url.
    redis_url_file: str = ""
    redis_key_prefix: str = "shellgate:"
    # The replicas' own secret (first line, >= 16 bytes; Redis never holds it): what grants
    # and is read back from Redis (approvals, grants, amendments) is sealed with it.
    # Required with redis_url / redis_url_file.
    shared_state_key_file: str = ""
    # Exec-server daemons discovered through DNS (one environment per resolved address).
    discovery: tuple[DnsDiscoveryConfig, ...] = ()
    # Every remote environment is health-checked this often (ListEnvironments reports the
    # last result; a daemon found down fails calls fast until it answers); 0 = never.
    environment_probe_interval_ms: int = 5_000
    redact_values_files: tuple[str, ...] = ()
    masked_paths: tuple[str, ...] = ()  # more files/folders every sandbox shows empty
    # The level of the one-line summary logged per completed call: "info" or "debug".
    call_log_level: str = "info"
    # OTLP/gRPC collector for OpenTelemetry traces (`shellgate[otel]`); empty = no tracing.
    otel_endpoint: str = ""
    # Spans carry the command text (redacted, attribute `shellgate.command`); off by default.
    otel_command_text: bool = False
    # Who decides approvals, operator deadlines, operators, the webhook (docs/approvals.md).
    approvals: ApprovalsConfig = field(default_factory=ApprovalsConfig)
    network: NetworkConfig = field(default_factory=NetworkConfig)  # docs/sandbox.md "Egress"
    # The file this configuration was read from (empty: none); set by load_config.
    source_file: str = ""

    @property
    def tls(self) -> bool:
        """True when the listener serves TLS."""
        return bool(self.tls_cert_file and self.tls_key_file)

    def wants_local_token(self) -> bool:
        """Whether start-up generates and publishes a local token (the safe default)."""
        return (self.local_token and not self.token_file and not self.tls_client_ca_file
                and is_loopback_address(self.listen))  # fmt: skip

    def secret_files(self) -> tuple[str, ...]:
        """Credential files (the audit log, its rotated PATH.N and key too) and masked_paths."""
        files = [self.source_file, self.token_file, self.tls_key_file, self.redis_url_file,
                 self.shared_state_key_file, self.metrics_token_file, self.metrics_tls_key_file,
                 self.console_tls_key_file, self.approvals.webhook.secret_file,
                 *self.redact_values_files, *self.masked_paths,
                 *(f for r in self.environments for f in (r.dial.token_file, r.dial.tls_key_file)),
                 *(f for d in self.discovery for f in (d.dial.token_file, d.dial.tls_key_file))]  # fmt: skip
        files += self.audit_files()
        return tuple(dict.fromkeys(f for f in files if f))

    def shared_store_url(self) -> str:
        """The Redis URL (read from `redis_url_file` when set); empty = no shared store."""
        if not self.redis_url_file:
            return self.redis_url
        try:
            url = Path(self.redis_url_file).read_text().strip()
        except OSError as exc:
            raise ConfigError(
                "redis_url_file", f"cannot read: {exc.strerror or exc}", got=self.redis_url_file
            ) from exc
        if not url:
            raise ConfigError("redis_url_file", "the file is empty", got=self.redis_url_file)
        return url

    def validate(self) -> None:
        """Refuse unsafe or inconsistent settings (types and ranges: ROUTER_TABLE)."""
        if not self.tls and not self.insecure and not is_loopback_address(self.listen):
            raise ConfigError(
                "listen", "address is not loopback: configure tls_cert_file and tls_key_file, "
                "or set insecure = true explicitly", got=self.listen,
            )  # fmt: skip
        try:
            check_health_listen(self.health_listen, self.listen)
        except ValueError as exc:
            raise ConfigError("health_listen", str(exc), got=self.health_listen) from exc
        check_extra_listen("project_listen", self.project_listen, self.listen,
                           secure=self.tls or self.insecure)  # fmt: skip
        for limit in dataclasses.fields(Limits):
            value = getattr(self.limits, limit.name)
            # 0 means "a fair share" for the per-subject cap; every other limit needs room.
            floor = 0 if limit.name in _ZERO_ALLOWED else 1
            if not isinstance(value, int) or isinstance(value, bool) or value < floor:
                raise ConfigError(f"limits.{limit.name}", f"must be >= {floor}", got=value)
        if bool(self.tls_cert_file) != bool(self.tls_key_file):
            key = "tls_key_file" if self.tls_cert_file else "tls_cert_file"
            raise ConfigError(key, "tls_cert_file and tls_key_file must be set together")
        try:
            self.connections.validate()
        except ValueError as exc:
            key, _, problem = str(exc).partition(" ")
            raise ConfigError(key, problem) from exc
        ids = [env.environment_id for env in self.environments]
        if self.local_environment:
            ids.insert(0, "local")
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ConfigError("environments", "duplicate environment ids (\"local\" is the "
                              "embedded one)", got=duplicates[0])  # fmt: skip
        # Discovery-only (the Kubernetes layout) may start empty: it is NOT_SERVING until
        # its first lookup finds a daemon.
        if not ids and not self.discovery:
            raise ConfigError(
                "local_environment",
                "no environments: enable local_environment, add [[environments]] or [[discovery]]",
            )
        self.approvals.validate()
        self.network.policy()  # a deny-list `*` is refused here, with its key
        self.validate_audit()
        if self.redis_url and self.redis_url_file:
            raise ConfigError("redis_url_file", "redis_url and redis_url_file are exclusive: set one")
        if (self.redis_url or self.redis_url_file) and not self.shared_state_key_file:
            raise ConfigError(
                "shared_state_key_file",
                "required with a shared store: a secret file of the replicas (not in Redis) "
                "that seals approvals, grants and amendments (e.g. `openssl rand -hex 32`)",
            )
        self._validate_console()

    @property
    def console_tls(self) -> bool:
        """True when the console listener serves HTTPS."""
        return bool(self.console_tls_cert_file and self.console_tls_key_file)

    def _validate_console(self) -> None:
        """The console's own listener: loopback, or TLS (the login token crosses it)."""
        if bool(self.console_tls_cert_file) != bool(self.console_tls_key_file):
            key = "console_tls_key_file" if self.console_tls_cert_file else "console_tls_cert_file"
            raise ConfigError(key, "console_tls_cert_file and console_tls_key_file must be set together")
        if self.console_listen and not self.console_tls and not is_loopback_address(self.console_listen):
            raise ConfigError(
                "console_listen", "address is not loopback: configure console_tls_cert_file "
                "and console_tls_key_file (operator tokens and session cookies cross it)",
                got=self.console_listen,
            )  # fmt: skip


# Limits for which 0 is meaningful (see Limits).
_ZERO_ALLOWED = frozenset(
    {"max_concurrent_executes_per_subject", "admission_wait_ms", "shutdown_grace_ms"}
)


# Names a configured default may take (service/wire/turn.py reads them; a test keeps the
# two in step).
ApprovalPolicyName = Literal["never", "on-failure", "on-request", "untrusted", "granular"]
PermissionProfileName = Literal[
    "read-only", "workspace-write", "danger-full-access", "external-sandbox"
]
ShellToolTypeName = Literal["default", "local", "unified_exec", "disabled", "shell_command"]
InheritName = Literal["all", "core", "none"]
_D = TurnDefaults()


class EnvPolicyTable(StrictModel):
    """`[defaults.shell_environment_policy]`, Codex's keys."""

    inherit: InheritName = "all"
    ignore_default_excludes: bool = _D.env_ignore_default_excludes
    exclude: list[str] = Field(default_factory=list)
    include_only: list[str] = Field(default_factory=list)
    set: dict[str, str] = Field(default_factory=dict)


class DefaultsTable(StrictModel):
    """`[defaults]`: what an unset TurnContext field means (TurnDefaults)."""

    approval_policy: ApprovalPolicyName = "on-request"
    permission_profile: PermissionProfileName = "workspace-write"
    shell_tool_type: ShellToolTypeName = "default"
    allow_login_shell: bool = _D.allow_login_shell
    truncation_tokens: NonNegativeInt = _D.truncation_tokens
    shell_environment_policy: EnvPolicyTable = Field(default_factory=EnvPolicyTable)

    def domain(self) -> TurnDefaults:
        """The TurnDefaults these keys mean (the env policy flattened into env_*)."""
        env = self.shell_environment_policy
        return TurnDefaults(
            approval_policy=self.approval_policy,
            permission_profile=self.permission_profile,
            shell_tool_type=self.shell_tool_type,
            allow_login_shell=self.allow_login_shell,
            truncation_tokens=self.truncation_tokens,
            env_inherit=env.inherit,
            env_ignore_default_excludes=env.ignore_default_excludes,
            env_exclude=tuple(env.exclude),
            env_set=tuple(sorted(env.set.items())),
            env_include_only=tuple(env.include_only),
        )


# The TOML boundary of RouterConfig (shellgate.common.config_schema): every table strict,
# unknown keys refused, enums and addresses checked at load.
ROUTER_TABLE = model_of(
    RouterConfig,
    types={
        "listen": ListenAddress,
        "health_listen": OptionalListenAddress,
        "project_listen": OptionalListenAddress,
        "metrics_listen": OptionalListenAddress,
        "console_listen": OptionalListenAddress,
        "console_session_idle_ms": PositiveInt,
        "console_max_sessions": PositiveInt,
        **AUDIT_TYPES,
        "call_log_level": Literal["info", "debug"],
        "client_environments": dict[str, list[str]],
        "environments": list[  # type: ignore[misc]
            model_of(
                RemoteConfig,
                aliases={"environment_id": "id"},
                types={"approval_route": Literal["caller", "operator"]},
                flatten=("dial",),
            )
        ],
        "approvals": APPROVALS_TABLE,
        "network": NETWORK_TABLE,
        "discovery": list[  # type: ignore[misc]
            model_of(DnsDiscoveryConfig, types={"port": Port}, flatten=("dial",))
        ],
        "defaults": DefaultsTable,
        "limits": model_of(
            Limits,
            types={
                f.name: PositiveInt for f in dataclasses.fields(Limits) if f.name not in _ZERO_ALLOWED
            },
        ),
        "connections": CONNECTIONS_TABLE,
    },
    skip=("source_file",),
)


def is_loopback_address(listen: str) -> bool:
    """True for 127.0.0.0/8, ::1 and localhost listen addresses (host:port)."""
    return is_loopback_host(listen.rsplit(":", 1)[0])


def check_rules_dirs(config: RouterConfig, flag: str = "") -> list[str]:
    """Refuse a rules folder that does not exist; warnings for folders without rules.

    Checked at start-up (not at parse: a config names its deployment's paths). `flag`
    names the command-line flag when the folders came from it.
    """
    warnings = []
    for index, folder in enumerate(config.rules_dirs):
        path = Path(folder).expanduser()
        key = flag or f"rules_dirs[{index}]"
        if not path.is_dir():
            raise ConfigError(key, "no such directory", got=folder)
        if not any(path.glob("*.rules")):
            warnings.append(f"{key}: {folder} holds no *.rules file (no rules from it)")
    return warnings


def parse_config(
    data: Mapping[str, Any], flags: Mapping[str, str] | None = None
) -> RouterConfig:
    """A RouterConfig from parsed TOML data (and flags); ConfigError names the key."""
    config: RouterConfig = validate_table(ROUTER_TABLE, data, flags).domain()
    config.validate()
    return config


def load_config(
    path: str | None, flags: Mapping[str, str] | None = None, **overrides: Any
) -> RouterConfig:
    """Load a TOML file (or nothing) and apply command-line overrides.

    `flags` maps an override's key to its flag, so a bad flag value names the flag.
    """
    data: dict[str, Any] = read_toml(path) if path else {}
    given = {k: v for k, v in overrides.items() if v is not None}
    data.update(given)
    config = parse_config(data, {k: f for k, f in (flags or {}).items() if k in given})
    return dataclasses.replace(config, source_file=str(Path(path).resolve())) if path else config
