"""Projection C: V1 canonicalization and approval keys with a stable digest (spec 03 §C; the
same digest in other processes: tests/integration/test_approval_digest_processes.py)."""

from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shellgate.router.approval_identity import (
    ApprovalKey,
    ApprovalKind,
    canonical_json,
    canonicalize_command_for_approval,
    exec_command_approval_key,
    shell_command_approval_key,
)
from shellgate.router.decode.params import FileSystemAccess
from shellgate.router.decode.sandbox_permissions import SandboxPermissions
from shellgate.router.handler.permissions import PermissionProfile

USE_DEFAULT = SandboxPermissions.USE_DEFAULT
WITH_ADDITIONAL = SandboxPermissions.WITH_ADDITIONAL_PERMISSIONS


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["bash", "-lc", "cargo   test"], ["cargo", "test"]),
        (["/bin/bash", "-lc", "cargo test"], ["cargo", "test"]),
        (["zsh", "-c", "echo 'a b'"], ["echo", "a b"]),
        (["bash", "-lc", "ls && pwd"], ["__codex_shell_script__", "-lc", "ls && pwd"]),
        (["sh", "-c", ""], ["__codex_shell_script__", "-c", ""]),
        (["bash", "-lc", "echo ~"], ["__codex_shell_script__", "-lc", "echo ~"]),
        (
            ["bash", "-lc", "python3 <<'PY'\nx\nPY"],
            ["__codex_shell_script__", "-lc", "python3 <<'PY'\nx\nPY"],
        ),
        (["pwsh", "-NoProfile", "-c", "dir"], ["__codex_powershell_script__", "dir"]),
        (["./zsh", "-c", "ls"], ["./zsh", "-c", "ls"]),
        (["/tmp/workspace/zsh", "-c", "ls"], ["/tmp/workspace/zsh", "-c", "ls"]),
        (["git", "status"], ["git", "status"]),
        ([], []),
    ],
)
def test_canonicalize(argv: list[str], expected: list[str]) -> None:
    assert canonicalize_command_for_approval(argv) == expected


def test_shell_key_digest_is_sha256_of_canonical_json() -> None:
    key = shell_command_approval_key(
        environment_id="local",
        argv=["/bin/bash", "-lc", "cargo test"],
        cwd="/work/ünï",
        sandbox_permissions=USE_DEFAULT,
        additional_permissions=None,
    )
    assert key.namespace == "shell"
    assert key.command == ("cargo", "test")
    text = (
        '{"additional_permissions":null,"command":["cargo","test"],"cwd":"/work/ünï",'
        '"environment_id":"local","kind":"shell_command","sandbox_permissions":"use_default"}'
    )
    assert canonical_json(key.to_json()) == text.encode()
    assert key.digest() == hashlib.sha256(text.encode()).hexdigest()


def test_exec_key_has_tty_and_profile() -> None:
    profile = PermissionProfile(
        network_enabled=True,
        entries=frozenset({("/b", FileSystemAccess.READ), ("/a", FileSystemAccess.WRITE)}),
        glob_scan_max_depth=3,
    )
    key = exec_command_approval_key(
        environment_id="e1",
        argv=["bash", "-lc", "ls"],
        cwd_uri="file:///work",
        tty=True,
        sandbox_permissions=WITH_ADDITIONAL,
        additional_permissions=profile,
    )
    assert key.kind is ApprovalKind.EXEC_COMMAND and key.namespace == "unified_exec"
    assert key.additional_permissions == profile
    record = key.to_json()
    assert record["tty"] is True
    # Entries sorted by path, whatever the set's order; the digest covers exactly this.
    assert record["additional_permissions"] == {
        "network": {"enabled": True},
        "file_system": [{"path": "/a", "access": "write"}, {"path": "/b", "access": "read"}],
        "glob_scan_max_depth": 3,
    }
    assert json.loads(canonical_json(record)) == record
    same = exec_command_approval_key(
        environment_id="e1",
        argv=["/bin/bash", "-lc", "ls"],
        cwd_uri="file:///work",
        tty=True,
        sandbox_permissions=WITH_ADDITIONAL,
        additional_permissions=PermissionProfile(True, frozenset(profile.entries), 3),
    )
    assert same == key and hash(same) == hash(key)
    assert same.digest() == key.digest()


def test_keys_differ_by_every_field() -> None:
    base = {
        "environment_id": "e1",
        "argv": ["ls"],
        "cwd_uri": "file:///w",
        "tty": False,
        "sandbox_permissions": USE_DEFAULT,
        "additional_permissions": None,
    }
    variants: list[dict[str, object]] = [
        {"environment_id": "e2"},
        {"argv": ["ls", "-l"]},
        {"cwd_uri": "file:///x"},
        {"tty": True},
        {"sandbox_permissions": SandboxPermissions.REQUIRE_ESCALATED},
        {"additional_permissions": PermissionProfile(network_enabled=True)},
        {"additional_permissions": PermissionProfile(network_enabled=False)},
    ]
    digests = {exec_command_approval_key(**base).digest()}  # type: ignore[arg-type]
    for change in variants:
        digests.add(exec_command_approval_key(**{**base, **change}).digest())  # type: ignore[arg-type]
    assert len(digests) == len(variants) + 1


# --- ApprovalKey.canonical: the direct form is byte-equal to canonical_json ---------------
_text = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=12)
_profiles = st.builds(
    PermissionProfile,
    network_enabled=st.booleans(),
    entries=st.frozensets(st.tuples(_text, st.sampled_from(list(FileSystemAccess))), max_size=3),
    glob_scan_max_depth=st.one_of(st.none(), st.integers(min_value=0, max_value=1 << 32)),
)


def _reference(key: ApprovalKey) -> bytes:
    """The record written out by hand and encoded the way the spec says (spec 06 §8)."""
    profile = key.additional_permissions
    written: dict[str, object] | None = None
    if profile is not None:
        written = {"network": {"enabled": profile.network_enabled}}
        if profile.entries:
            written["file_system"] = [
                {"path": path, "access": str(access)} for path, access in sorted(profile.entries)
            ]
        if profile.glob_scan_max_depth is not None:
            written["glob_scan_max_depth"] = profile.glob_scan_max_depth
    record: dict[str, object] = {
        "kind": str(key.kind),
        "environment_id": key.environment_id,
        "command": list(key.command),
        "cwd": key.cwd,
        "sandbox_permissions": str(key.sandbox_permissions),
        "additional_permissions": written,
    }
    if key.kind is ApprovalKind.EXEC_COMMAND:
        record["tty"] = key.tty
    text = json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode("utf-8", "surrogatepass")


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(list(ApprovalKind)),
    _text,
    st.lists(_text, max_size=4).map(tuple),
    _text,
    st.sampled_from(list(SandboxPermissions)),
    st.one_of(st.none(), _profiles),
    st.one_of(st.none(), st.booleans()),
)
def test_canonical_matches_generic_encoding(
    kind: ApprovalKind,
    environment_id: str,
    command: tuple[str, ...],
    cwd: str,
    sandbox: SandboxPermissions,
    profile: PermissionProfile | None,
    tty: bool | None,
) -> None:
    key = ApprovalKey(kind, environment_id, command, cwd, sandbox, profile, tty)
    assert key.canonical() == canonical_json(key.to_json()) == _reference(key)
    assert key.digest() == hashlib.sha256(_reference(key)).hexdigest()


def test_canonical_escapes_like_json_dumps() -> None:
    key = ApprovalKey(
        ApprovalKind.SHELL_COMMAND, "e\"\\", ("a\nb", "\x00\x1f\x7f", "é😀", "\ud800"), "/c",
        USE_DEFAULT, None, None,
    )  # fmt: skip
    assert key.canonical() == canonical_json(key.to_json()) == _reference(key)
