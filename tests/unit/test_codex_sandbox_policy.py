"""Codex's `sandbox` field → SandboxSpec: what 0.169.0 sends maps; the rest is refused."""

from __future__ import annotations

from typing import Any

import pytest
from shellgate.common.errors import SandboxUnavailableError
from shellgate.common.sandbox import SandboxMode, SandboxSpec
from shellgate.execserver.codex.sandbox_policy import sandbox_spec

from tests.codex_sandbox_wire import codex_sandbox, entry, workspace_write_entries

CWD = "file:///srv/work"
ENV = {"TMPDIR": "/var/scratch"}


def test_no_sandbox_is_none() -> None:
    """danger-full-access sends `sandbox: null`: nothing to apply."""
    assert sandbox_spec(None, ENV) is None


def test_workspace_write_maps_to_writable_roots_network_off() -> None:
    """The project root, /tmp and $TMPDIR become writable; protected names stay as they are."""
    assert sandbox_spec(codex_sandbox(CWD), ENV) == SandboxSpec(
        mode=SandboxMode.WORKSPACE_WRITE,
        writable_roots=("/srv/work", "/tmp", "/var/scratch"),
        network_access=False,
    )
    # Without an absolute $TMPDIR, tmpdir adds nothing (as Codex resolves it).
    assert sandbox_spec(codex_sandbox(CWD), {}).writable_roots == ("/srv/work", "/tmp")  # type: ignore[union-attr]


def test_read_only_and_network_enabled() -> None:
    """Only `/` read: read-only; `network: enabled` keeps the network."""
    spec = sandbox_spec(codex_sandbox(CWD, [entry("root", "read")], network="enabled"), ENV)
    assert spec == SandboxSpec(mode=SandboxMode.READ_ONLY, network_access=True)


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ({"type": "workspaceWrite"}, "without `permissions`"),
        (codex_sandbox(CWD, [entry("project_roots", "write")]), "without read access to /"),
        (codex_sandbox(CWD, [entry("root", "read"), entry("project_roots", "none", "secret")]),
         "access 'none'"),
        (codex_sandbox(CWD, [entry("root", "read"), entry("project_roots", "read", "src")]),
         "carve-out"),
        (codex_sandbox(CWD, [entry("root", "write")]), "write access to /"),
        (codex_sandbox(CWD, [entry("root", "read"), entry("home", "write")]), "kind 'home'"),
        (codex_sandbox(CWD, [entry("root", "read"),
                             {"path": {"type": "path", "path": "/x"}, "access": "write"}]),
         "type 'path'"),
        (codex_sandbox(CWD, network="proxied"), "network 'proxied'"),
        ({**codex_sandbox(CWD), "extraRule": 1}, "unknown sandbox field `extraRule`"),
    ],
)  # fmt: skip
def test_unenforceable_is_refused(raw: dict[str, Any], why: str) -> None:
    """Anything the bubblewrap sandbox does not enforce exactly is refused, with the reason."""
    with pytest.raises(SandboxUnavailableError) as refused:
        sandbox_spec(raw, ENV)
    assert why in refused.value.message and "nothing ran" in refused.value.message


def test_protected_names_are_the_sandboxs_own() -> None:
    """Every read-only carve-out Codex asks for is one the sandbox already keeps."""
    spec = sandbox_spec(codex_sandbox(CWD, workspace_write_entries()), ENV)
    assert spec is not None and spec.mode is SandboxMode.WORKSPACE_WRITE
