"""The apply_patch runtime's pure parts: its approval key digest and the patch safety check."""

from __future__ import annotations

import hashlib
import json

import pytest
from shellgate.router.apply_patch import ApplyPatchAction, MemoryFileSystem, intercept_apply_patch
from shellgate.router.approval_identity import ApplyPatchApprovalKey
from shellgate.router.policy import ApprovalMode, ApprovalPolicy, SandboxProfile
from shellgate.router.runtime.runtimes.apply_patch import (
    PATCH_OUTSIDE_PROJECT,
    PATCH_READ_ONLY,
    AskUser,
    AutoApprove,
    Reject,
    SafetyCheck,
    assess_patch_safety,
)

# Digests the former `runtime/gating.patch_approval_digest` produced for these keys.
GOLDEN = [
    (("local", "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n", "/work"),
     "78bd5232ea67b6fbf81de97c15ba4309e11e599b5bdb472978cb73596699bc67"),
    (("gpu-1", '*** Begin Patch\n*** Add File: é/ü.txt\n+\u2028"\\\t\n*** End Patch', "/tmp/x y"),
     "93481173300d35b17c3e5464c5c0160c5c899b522766010091d15c9e2fc84ce3"),
    (("local", "\ud800 lone", "/w"),
     "f800d7197229dc7a8c5148526acf1060448e0a2f64861969c6a12ba1ea79a818"),
]  # fmt: skip


def _former_digest(environment_id: str, patch: str, cwd: str) -> str:
    # The former algorithm, verbatim: `{kind, environment_id, patch, cwd}` as canonical JSON.
    key = {"kind": "apply_patch", "environment_id": environment_id, "patch": patch, "cwd": cwd}
    text = json.dumps(key, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@pytest.mark.parametrize(("fields", "digest"), GOLDEN)
def test_the_key_digest_is_the_former_one(fields: tuple[str, str, str], digest: str) -> None:
    key = ApplyPatchApprovalKey(*fields)
    assert key.digest() == digest == _former_digest(*fields)
    assert key.namespace == "apply_patch"


def test_keys_differ_by_every_field() -> None:
    base = ApplyPatchApprovalKey("local", "p", "/w")
    others = [ApplyPatchApprovalKey("remote", "p", "/w"), ApplyPatchApprovalKey("local", "q", "/w"),
              ApplyPatchApprovalKey("local", "p", "/v")]  # fmt: skip
    assert len({base.digest(), *(k.digest() for k in others)}) == 4


def _action(path: str) -> ApplyPatchAction:
    patch = f"*** Begin Patch\n*** Add File: {path}\n+x\n*** End Patch\n"
    action = intercept_apply_patch(["apply_patch", patch], "/work", MemoryFileSystem())
    assert isinstance(action, ApplyPatchAction)
    return action


NEVER = ApprovalPolicy(ApprovalMode.NEVER)
ON_REQUEST = ApprovalPolicy(ApprovalMode.ON_REQUEST)
ON_FAILURE = ApprovalPolicy(ApprovalMode.ON_FAILURE)
UNTRUSTED = ApprovalPolicy(ApprovalMode.UNLESS_TRUSTED)
ROOTS = ("/work", "/tmp")


@pytest.mark.parametrize(
    ("path", "profile", "policy", "check"),
    [
        ("a.txt", SandboxProfile.DISABLED, NEVER, AutoApprove()),
        ("a.txt", SandboxProfile.WORKSPACE_WRITE, NEVER, AutoApprove()),
        ("/etc/a.txt", SandboxProfile.WORKSPACE_WRITE, ON_REQUEST, AskUser()),
        ("/etc/a.txt", SandboxProfile.WORKSPACE_WRITE, NEVER, Reject(PATCH_OUTSIDE_PROJECT)),
        # on-failure reads as never for patches, as for the exec policy.
        ("/etc/a.txt", SandboxProfile.WORKSPACE_WRITE, ON_FAILURE, Reject(PATCH_OUTSIDE_PROJECT)),
        ("a.txt", SandboxProfile.READ_ONLY, ON_REQUEST, AskUser()),
        ("a.txt", SandboxProfile.READ_ONLY, NEVER, Reject(PATCH_READ_ONLY)),
        # untrusted asks about every patch, even one the profile would allow.
        ("a.txt", SandboxProfile.DISABLED, UNTRUSTED, AskUser()),
    ],
)
def test_patch_safety(
    path: str, profile: SandboxProfile, policy: ApprovalPolicy, check: SafetyCheck
) -> None:
    assert assess_patch_safety(_action(path), profile, policy, ROOTS) == check
