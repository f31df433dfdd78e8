"""What `shellgate serve` checks and says at start-up: the sandbox it can apply, and a banner
naming the address, the environments, the sandbox, the rules and how to call it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from shellgate.common.cli_options import package_version
from shellgate.common.sandbox import (
    local_sandbox_summary,
    sandbox_remedy,
    sandbox_unavailable_reason,
)
from shellgate.router.service.config import DEFAULT_LISTEN, RouterConfig

# Default permission profiles that wrap every local command in bubblewrap (spec 06 §7).
SANDBOXED_PROFILES = frozenset({"read-only", "workspace-write"})
PROFILES = ("read-only", "workspace-write", "danger-full-access", "external-sandbox")
# Listen-anywhere hosts and the loopback address a call on this host uses instead.
_WILDCARDS = {"0.0.0.0": "127.0.0.1", "[::]": "[::1]", "::": "[::1]"}


def sandbox_refusal(config: RouterConfig) -> str | None:
    """Why the router must not start (one line), or None.

    A router whose embedded environment would wrap every default command in a bubblewrap
    that cannot run here refuses at once: otherwise each call fails with a spawn error.
    """
    profile = config.defaults.permission_profile
    if not config.local_environment or profile not in SANDBOXED_PROFILES:
        return None
    reason = sandbox_unavailable_reason()
    if not reason:
        return None
    return (
        f"the default permission profile {profile} runs commands under bubblewrap, which cannot "
        f"run here ({reason}): {sandbox_remedy(reason)}, or pass --sandbox danger-full-access "
        "to run commands without a sandbox"
    )


def banner_lines(config: RouterConfig, port: int, rules_files: Sequence[Path] | None,
                 token_path: Path | None, console_port: int | None = None) -> list[str]:  # fmt: skip
    """The start-up banner: where it listens, what it runs on, under what, how to call it,
    and the operator console's URL when it serves one."""
    host = config.listen.rsplit(":", 1)[0]
    address = f"{host}:{port}"
    envs = (
        [f"local (embedded, cwd {config.local_cwd or Path.cwd()})"]
        if config.local_environment
        else []
    )
    envs += [f"{env.environment_id} (exec-server {env.target})" for env in config.environments]
    envs += [f"{d.id_prefix}-* (DNS {d.dns_name})" for d in config.discovery]
    profile = config.defaults.permission_profile
    if not config.local_environment:
        sandbox = "applied by each exec-server on its own host"
    elif profile in SANDBOXED_PROFILES:
        sandbox = local_sandbox_summary()
    else:
        sandbox = f"none by default ({profile}); turns that ask for one: {local_sandbox_summary()}"
    if rules_files is None:
        rules = "none (no --rules-dir or rules_dirs: Codex's built-in safety heuristics decide)"
    else:
        dirs = ", ".join(config.rules_dirs)
        rules = f"{len(rules_files)} .rules file(s) from {dirs}"
    lines = [
        f"shellgate {package_version()} router listening on {address}",
        f"  environments: {', '.join(envs) or 'none yet (discovery)'}",
        f"  sandbox: default permission profile {profile}; local sandbox: {sandbox}",
        f"  rules: {rules}",
    ]
    lines += auth_lines(config, token_path)
    if console_port is not None and config.console_listen:
        lines.append(
            f"  console: {console_url(config, console_port)} (log in with an operator token)"
        )
    lines += try_lines(config, address)
    return lines


def console_url(config: RouterConfig, port: int) -> str:
    """The console's URL a browser on this host opens (a wildcard host as loopback)."""
    host = config.console_listen.rsplit(":", 1)[0]
    host = _WILDCARDS.get(host, host)
    return f"{'https' if config.console_tls else 'http'}://{host}:{port}/"


def auth_lines(config: RouterConfig, token_path: Path | None) -> list[str]:
    """Who may call: the generated token, the token file, client certificates, or anyone."""
    if token_path is not None:
        return [f"  auth: generated token in {token_path} (`shellgate token` prints it)"]
    said = []
    if config.token_file:
        said.append(f"bearer tokens from {config.token_file}")
    if config.tls_client_ca_file:
        said.append(f"client certificates signed by {config.tls_client_ca_file} (mTLS)")
    if not said:
        return ["  auth: none: anyone who can reach the address may call"]
    return [f"  auth: {' and '.join(said)}"]


def try_lines(config: RouterConfig, address: str) -> list[str]:
    """A `shellgate call` that works against this router, and what its placeholders mean.

    The generated local token is found by `shellgate call` itself; a token file's tokens and
    the certificates are the caller's own, so they appear as placeholders explained below.
    """
    host, port = address.rsplit(":", 1)
    wildcard = host in _WILDCARDS
    if wildcard:
        # A wildcard address accepts on loopback too: the call below runs on this host.
        address = f"{_WILDCARDS[host]}:{port}"
    flags, notes = [], []
    if address != DEFAULT_LISTEN:
        flags.append(f"--target {address}")
    if config.token_file:
        flags.append("--token TOKEN")
        notes.append(f"TOKEN: a bearer token {config.token_file} accepts")
    if config.tls_cert_file:
        flags.append("--tls-ca CA.pem")
        notes.append(f"CA.pem: the CA certificate that signed {config.tls_cert_file}")
        if wildcard:
            # The loopback address is not the name the certificate was issued for.
            flags.append("--tls-server-name NAME")
            notes.append(f"NAME: a host name {config.tls_cert_file} names")
    if config.tls_client_ca_file:
        flags.append("--tls-cert CLIENT.crt --tls-key CLIENT.key")
        notes.append(f"CLIENT.crt/.key: a client certificate signed by {config.tls_client_ca_file}")
    lines = [f'  try: shellgate call {" ".join([*flags, "--cmd"])} "echo hello"']
    if notes:
        lines.append(f"       ({'; '.join(notes)})")
    return lines
