"""Projection C: V1 canonicalization and approval keys with a stable digest (spec 03 §C)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import pytest
from shellgate.router.approval_identity import (
    ApprovalKind,
    JsonValue,
    canonical_json,
    canonicalize_command_for_approval,
    exec_command_approval_key,
    shell_command_approval_key,
)


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
        sandbox_permissions="use_default",
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
    profile: dict[str, JsonValue] = {
        "network": {"enabled": True},
        "file_system": {"write": ["/a"]},
    }
    key = exec_command_approval_key(
        environment_id="e1",
        argv=["bash", "-lc", "ls"],
        cwd_uri="file:///work",
        tty=True,
        sandbox_permissions="with_additional_permissions",
        additional_permissions=profile,
    )
    assert key.kind is ApprovalKind.EXEC_COMMAND and key.namespace == "unified_exec"
    assert key.additional_permissions == profile
    record = key.to_json()
    assert record["tty"] is True
    assert json.loads(canonical_json(record)) == record
    reordered = exec_command_approval_key(
        environment_id="e1",
        argv=["/bin/bash", "-lc", "ls"],
        cwd_uri="file:///work",
        tty=True,
        sandbox_permissions="with_additional_permissions",
        additional_permissions={"file_system": {"write": ["/a"]}, "network": {"enabled": True}},
    )
    assert reordered == key and hash(reordered) == hash(key)
    assert reordered.digest() == key.digest()


def test_keys_differ_by_every_field() -> None:
    base = {
        "environment_id": "e1",
        "argv": ["ls"],
        "cwd_uri": "file:///w",
        "tty": False,
        "sandbox_permissions": "use_default",
        "additional_permissions": None,
    }
    variants: list[dict[str, object]] = [
        {"environment_id": "e2"},
        {"argv": ["ls", "-l"]},
        {"cwd_uri": "file:///x"},
        {"tty": True},
        {"sandbox_permissions": "require_escalated"},
        {"additional_permissions": {"network": {"enabled": True}}},
    ]
    digests = {exec_command_approval_key(**base).digest()}  # type: ignore[arg-type]
    for change in variants:
        digests.add(exec_command_approval_key(**{**base, **change}).digest())  # type: ignore[arg-type]
    assert len(digests) == len(variants) + 1


def test_digest_is_stable_across_processes() -> None:
    code = (
        "from shellgate.router.approval_identity import shell_command_approval_key as k;"
        "print(k(environment_id='local', argv=['/bin/bash','-lc','cargo test'],"
        " cwd='/work/ünï', sandbox_permissions='use_default',"
        " additional_permissions=None).digest())"
    )
    digests = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
            env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"},
        ).stdout.strip()
        for seed in ("1", "2")
    }
    key = shell_command_approval_key(
        environment_id="local",
        argv=["/bin/bash", "-lc", "cargo test"],
        cwd="/work/ünï",
        sandbox_permissions="use_default",
        additional_permissions=None,
    )
    assert digests == {key.digest()}
