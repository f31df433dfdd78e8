"""Codex's `sandbox` request field → shellgate's `SandboxSpec` (or a refusal).

Codex 0.169.0 sends, on `process/start` and on mutating `fs/*` calls, a managed permission
profile (observed on the wire, `sandbox_mode = "read-only"` / `"workspace-write"`):

    {"permissions": {"type": "managed",
                     "file_system": {"type": "restricted", "entries": [
                         {"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"},
                         {"path": {... "kind": "project_roots"}}, "access": "write"},
                         {"path": {... "kind": "slash_tmp"}}, "access": "write"},
                         {"path": {... "kind": "tmpdir"}}, "access": "write"},
                         {"path": {... "kind": "project_roots", "subpath": ".git"}},
                          "access": "read", "missing_path_behavior": "skip"}, ...]},
                     "network": "restricted"},
     "cwd": "file:///…", "workspaceRoots": ["file:///…"], ...}

That is exactly what the bubblewrap sandbox enforces: everything readable, writes only under
the writable roots with the protected names read-only, network off. Anything else (read
restrictions, explicit paths, unknown kinds or keys, writable `/`) is refused: the daemon
never runs a request with less confinement than it asked for.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from shellgate.common.errors import SandboxUnavailableError
from shellgate.common.sandbox import PROTECTED_NAMES, SandboxMode, SandboxSpec
from shellgate.execserver.codex.wire import path_from_uri

# Keys that only matter on other platforms or name the same enforcement by another means
# (Landlock vs bubblewrap); anything not listed here or used below is refused.
_IGNORED_KEYS = frozenset({
    "windowsSandboxLevel", "windowsSandboxProxySettingsMode", "useLegacyLandlock",
    "userHomeDir", "policyContext",
})  # fmt: skip
_SANDBOX_KEYS = frozenset({"permissions", "cwd", "workspaceRoots"}) | _IGNORED_KEYS
_ENTRY_KEYS = frozenset({"path", "access", "missing_path_behavior"})
_NETWORK = {"restricted": False, "enabled": True}


def _refuse(what: str) -> SandboxUnavailableError:
    return SandboxUnavailableError(
        f"shellgate-execserver cannot enforce this Codex sandbox: {what}; refused, nothing ran"
    )


def _keys(raw: Mapping[str, Any], allowed: frozenset[str], where: str) -> None:
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise _refuse(f"unknown {where} field `{unknown[0]}`")


def _workspace_roots(raw: Mapping[str, Any]) -> tuple[str, ...]:
    roots = raw.get("workspaceRoots")
    context = raw.get("policyContext")
    if roots is None and isinstance(context, dict):
        roots = context.get("workspaceRoots")
    if roots is None:
        roots = [raw["cwd"]] if raw.get("cwd") is not None else []
    if not isinstance(roots, list):
        raise _refuse("workspaceRoots is not a list")
    return tuple(path_from_uri(r, "workspaceRoots") for r in roots)


def _special(path: Any) -> tuple[str, str | None]:
    """(kind, subpath) of a `special` path; any other path type is refused."""
    if not isinstance(path, dict) or path.get("type") != "special":
        kind = path.get("type") if isinstance(path, dict) else path
        raise _refuse(f"file_system path of type {kind!r} (only special paths are supported)")
    value = path.get("value")
    if not isinstance(value, dict) or not isinstance(value.get("kind"), str):
        raise _refuse("file_system special path without a kind")
    _keys(value, frozenset({"kind", "subpath"}), "special path")
    subpath = value.get("subpath")
    if subpath is not None and not isinstance(subpath, str):
        raise _refuse("file_system subpath is not a string")
    return value["kind"], subpath


def _write_targets(
    kind: str, subpath: str | None, workspace: tuple[str, ...], daemon_env: Mapping[str, str]
) -> list[str]:
    """The absolute roots a `write` entry makes writable."""
    if kind == "project_roots":
        if subpath is not None and (os.path.isabs(subpath) or ".." in subpath.split("/")):
            raise _refuse(f"project_roots subpath {subpath!r} leaves the project")
        return [os.path.join(r, subpath) if subpath else r for r in workspace]
    if subpath is not None:
        raise _refuse(f"a subpath under {kind!r}")
    if kind == "slash_tmp":
        return ["/tmp"]
    if kind == "tmpdir":
        # As Codex: $TMPDIR when it names an absolute path, otherwise nothing.
        tmpdir = daemon_env.get("TMPDIR", "")
        return [tmpdir] if os.path.isabs(tmpdir) else []
    if kind == "root":
        raise _refuse("write access to / (use danger-full-access instead)")
    raise _refuse(f"file_system special path kind {kind!r}")


def _read_entry(kind: str, subpath: str | None) -> bool:
    """Whether a `read` entry is the whole-disk read baseline (others must already hold)."""
    if kind == "root" and subpath is None:
        return True
    if kind == "project_roots" and subpath in PROTECTED_NAMES:
        return False  # kept read-only under every writable root by the sandbox itself
    if kind in ("slash_tmp", "tmpdir", "project_roots") and subpath is None:
        return False  # readable anyway: the whole disk is
    raise _refuse(f"a read-only carve-out {kind}/{subpath} (only {', '.join(PROTECTED_NAMES)})")


def sandbox_spec(raw: Any, daemon_env: Mapping[str, str]) -> SandboxSpec | None:
    """The SandboxSpec for a request's `sandbox` field (None: no sandbox was asked for)."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("permissions"), dict):
        raise _refuse("`sandbox` without `permissions`")
    _keys(raw, _SANDBOX_KEYS, "sandbox")
    permissions = raw["permissions"]
    _keys(permissions, frozenset({"type", "file_system", "network"}), "permissions")
    if permissions.get("type") != "managed":
        raise _refuse(f"permissions of type {permissions.get('type')!r}")
    network = permissions.get("network")
    if network not in _NETWORK:
        raise _refuse(f"network {network!r}")
    fs = permissions.get("file_system")
    if not isinstance(fs, dict) or fs.get("type") != "restricted":
        raise _refuse("an unrestricted or unknown file_system policy")
    _keys(fs, frozenset({"type", "entries"}), "file_system")
    entries = fs.get("entries")
    if not isinstance(entries, list):
        raise _refuse("file_system without entries")
    workspace = _workspace_roots(raw)
    writable: list[str] = []
    reads_everything = False
    for entry in entries:
        if not isinstance(entry, dict):
            raise _refuse("a file_system entry that is not an object")
        _keys(entry, _ENTRY_KEYS, "file_system entry")
        kind, subpath = _special(entry.get("path"))
        access = entry.get("access")
        if access == "write":
            writable += [t for t in _write_targets(kind, subpath, workspace, daemon_env)
                         if t not in writable]  # fmt: skip
        elif access == "read":
            reads_everything |= _read_entry(kind, subpath)
        else:
            raise _refuse(f"file_system access {access!r} (no read restrictions)")
    if not reads_everything:
        raise _refuse("a file_system without read access to / (no read restrictions)")
    mode = SandboxMode.WORKSPACE_WRITE if writable else SandboxMode.READ_ONLY
    return SandboxSpec(mode=mode, writable_roots=tuple(writable), network_access=_NETWORK[network])
