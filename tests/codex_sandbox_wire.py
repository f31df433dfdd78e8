"""The `sandbox` field Codex 0.169.0 sends, as captured on the wire (read-only, workspace-write)."""

from __future__ import annotations

from typing import Any


def _special(kind: str, subpath: str | None = None) -> dict[str, Any]:
    value: dict[str, Any] = {"kind": kind}
    if subpath is not None:
        value["subpath"] = subpath
    return {"type": "special", "value": value}


def entry(kind: str, access: str, subpath: str | None = None) -> dict[str, Any]:
    """One file_system entry as Codex writes it."""
    item: dict[str, Any] = {"path": _special(kind, subpath), "access": access}
    if subpath is not None:
        item["missing_path_behavior"] = "skip"
    return item


def workspace_write_entries() -> list[dict[str, Any]]:
    """`sandbox_mode = "workspace-write"`'s entries, in Codex's order."""
    return [
        entry("root", "read"), entry("project_roots", "write"), entry("slash_tmp", "write"),
        entry("tmpdir", "write"),
        *(entry("project_roots", "read", name) for name in (".git", ".agents", ".codex", ".aws")),
    ]  # fmt: skip


def codex_sandbox(
    cwd_uri: str, entries: list[dict[str, Any]] | None = None, network: str = "restricted"
) -> dict[str, Any]:
    """A process/start `sandbox` (workspace-write by default; `[entry("root", "read")]` is
    read-only)."""
    return {
        "permissions": {
            "type": "managed",
            "file_system": {"type": "restricted",
                            "entries": workspace_write_entries() if entries is None else entries},
            "network": network,
        },
        "cwd": cwd_uri, "workspaceRoots": [cwd_uri], "windowsSandboxLevel": "disabled",
        "windowsSandboxProxySettingsMode": "reconcile", "useLegacyLandlock": False,
    }  # fmt: skip
