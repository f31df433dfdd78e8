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
                 token_path: Path | None) -> list[str]:  # fmt: skip
    """The start-up banner: where it listens, what it runs on, under what, and how to call it."""
    host = config.listen.rsplit(":", 1)[0]
    address = f"{host}:{port}"
    envs = [f"local (embedded, cwd {config.local_cwd or Path.cwd()})"] if config.local_environment else []
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
    target = "" if address == DEFAULT_LISTEN else f" --target {address}"
    lines = [
        f"shellgate {package_version()} router listening on {address}",
        f"  environments: {', '.join(envs) or 'none yet (discovery)'}",
        f"  sandbox: default permission profile {profile}; local sandbox: {sandbox}",
        f"  rules: {rules}",
    ]
    if token_path is not None:
        lines.append(f"  auth: generated token in {token_path} (`shellgate token` prints it)")
    lines.append(f'  try: shellgate call{target} --cmd "echo hello"')
    return lines
