"""The apply_patch runtime's pure parts: its approval key digest and the patch safety check
(the writable roots, and the protected names a sandboxed command could not write either)."""

from __future__ import annotations

import hashlib
import json

import pytest
from shellgate.router.apply_patch import ApplyPatchAction, MemoryFileSystem, intercept_apply_patch
from shellgate.router.apply_patch.protected import protected_areas, touches_protected
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


def _patch_of(*hunks: str) -> ApplyPatchAction:
    patch = "*** Begin Patch\n" + "".join(hunks) + "*** End Patch\n"
    files = {"/work/a.txt": "a\n", "/work/.git/config": "c\n", "/work/.codex/x": "x\n"}
    action = intercept_apply_patch(["apply_patch", patch], "/work", MemoryFileSystem(files))
    assert isinstance(action, ApplyPatchAction), action
    return action


@pytest.mark.parametrize(
    "hunk",
    [
        "*** Add File: .git/hooks/pre-commit\n+x\n",
        "*** Update File: .git/config\n@@\n-c\n+d\n",
        "*** Delete File: .codex/x\n",
        "*** Update File: a.txt\n*** Move to: .agents/a.txt\n@@\n-a\n+b\n",  # move target
        "*** Update File: .git/config\n*** Move to: b.txt\n@@\n-c\n+d\n",  # move source
        # A name not there yet is protected too: creating `.git` (or a `.git` file, which
        # git would follow as a pointer) asks, even in a folder that is no repository.
        "*** Add File: .aws/credentials\n+k\n",
        "*** Add File: .git\n+gitdir: /tmp/evil\n",
        "*** Add File: /tmp/.git/hooks/x\n+x\n",  # under every writable root, /tmp too
    ],
)
def test_a_patch_into_a_protected_name_is_like_one_outside_the_roots(hunk: str) -> None:
    fs = MemoryFileSystem({"/work/.git/config": "c\n"})

    def areas() -> tuple[str, ...]:
        return protected_areas(ROOTS, fs)

    action = _patch_of(hunk)
    ws = SandboxProfile.WORKSPACE_WRITE
    assert assess_patch_safety(action, ws, ON_REQUEST, ROOTS, protected=areas) == AskUser()
    rejected = assess_patch_safety(action, ws, NEVER, ROOTS, protected=areas)
    assert rejected == Reject(PATCH_OUTSIDE_PROJECT)
    # Full access writes anywhere, so there is nothing to ask.
    assert assess_patch_safety(action, SandboxProfile.DISABLED, NEVER, ROOTS, protected=areas) == (
        AutoApprove()
    )


def test_ordinary_and_look_alike_paths_still_apply_without_asking() -> None:
    fs = MemoryFileSystem({"/work/.git/config": "c\n"})
    for hunk in ("*** Add File: src/.git-notes\n+x\n", "*** Add File: .github/ci.yml\n+x\n",
                 "*** Add File: sub/.git/x\n+x\n", "*** Update File: a.txt\n@@\n-a\n+b\n"):  # fmt: skip
        check = assess_patch_safety(
            _patch_of(hunk), SandboxProfile.WORKSPACE_WRITE, NEVER, ROOTS,
            protected=lambda: protected_areas(ROOTS, fs),
        )  # fmt: skip
        assert check == AutoApprove(), hunk


def test_a_git_pointer_protects_the_folder_it_names() -> None:
    # A worktree's `.git` file names its gitdir; the sandbox binds that read-only too.
    fs = MemoryFileSystem({"/work/.git": "gitdir: ../main/.git/worktrees/w\n"})
    areas = protected_areas(("/work",), fs)
    assert "/main/.git/worktrees/w" in areas
    assert "/work/.git" in areas
    assert touches_protected(["/main/.git/worktrees/w/HEAD"], areas)
    assert not touches_protected(["/main/src/a.py", "/work/src/a.py"], areas)


def test_where_a_write_lands_counts_too() -> None:
    # `hooks` is a symlink into .git: the text is harmless, the resolved path is not.
    areas = protected_areas(("/work",), MemoryFileSystem())

    def resolve(path: str) -> str:
        return path.replace("/work/hooks", "/work/.git/hooks")

    assert touches_protected(["/work/hooks/pre-commit"], areas, resolve)
    assert not touches_protected(["/work/hooks/pre-commit"], areas)
