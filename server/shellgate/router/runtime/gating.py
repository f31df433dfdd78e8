"""Sandbox choice, apply_patch approval rules and approval-offer helpers (spec 06 §3, §7)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from shellgate.common.sandbox import SandboxMode, SandboxSpec
from shellgate.router.apply_patch import ApplyPatchAction
from shellgate.router.apply_patch.paths import is_within
from shellgate.router.envelope import ExecutionEnvelope
from shellgate.router.policy import ApprovalMode, ApprovalPolicy, PermissionProfile, engine_mode
from shellgate.router.runtime.events import ApprovalDecision
from shellgate.router.runtime.spawn import NO_SANDBOX

__all__ = [
    "PATCH_OUTSIDE_PROJECT",
    "PATCH_READ_ONLY",
    "SANDBOX_RETRY_REASON",
    "choose_sandbox",
    "offered_decisions",
    "patch_approval_digest",
    "patch_gate",
    "sandbox_retry_allowed",
]

SANDBOX_RETRY_REASON = (
    "command was blocked by the sandbox; approve to run it again without the sandbox"
)
PATCH_READ_ONLY = (
    "patch rejected: writing is blocked by read-only sandbox; rejected by user approval settings"
)
PATCH_OUTSIDE_PROJECT = (
    "patch rejected: writing outside of the project; rejected by user approval settings"
)


def writable_roots(envelope: ExecutionEnvelope, extra_roots: Sequence[str] = ()) -> tuple[str, ...]:
    """Workspace-write roots: the environment root, /tmp, $TMPDIR and configured extras."""
    roots = [envelope.sandbox_cwd, "/tmp"]
    tmpdir = envelope.env_map.get("TMPDIR")
    if tmpdir:
        roots.append(tmpdir)
    roots.extend(extra_roots)
    return tuple(dict.fromkeys(roots))


def choose_sandbox(
    envelope: ExecutionEnvelope,
    profile: PermissionProfile,
    *,
    bypass: bool,
    extra_roots: Sequence[str] = (),
    network_access: bool = False,
) -> SandboxSpec:
    """The first attempt's sandbox (spec 04 §6, 06 §7): none when bypassed or escalated."""
    if bypass or envelope.effective_permissions.sandbox_permissions == "require_escalated":
        return NO_SANDBOX
    if profile is PermissionProfile.READ_ONLY:
        return SandboxSpec(SandboxMode.READ_ONLY, (), network_access)
    if profile is PermissionProfile.WORKSPACE_WRITE:
        return SandboxSpec(
            SandboxMode.WORKSPACE_WRITE, writable_roots(envelope, extra_roots), network_access
        )
    # danger-full-access, and an external sandbox that already confines us.
    return NO_SANDBOX


def sandbox_retry_allowed(policy: ApprovalPolicy) -> bool:
    """Whether a sandbox denial may be offered an unsandboxed retry (on-request / on-failure).

    Reads the policy as given: unlike the exec policy, this offer tells on-failure from never.
    """
    if policy.mode in (ApprovalMode.ON_REQUEST, ApprovalMode.ON_FAILURE):
        return True
    return policy.granular is not None and policy.granular.sandbox_approval


def patch_gate(
    action: ApplyPatchAction,
    profile: PermissionProfile,
    policy: ApprovalPolicy,
    roots: Sequence[str],
) -> str | None:
    """`apply`, `ask`, or the rejection text of a verified non-empty patch (spec 02 §6.4)."""
    # The exec policy's reading of the mode: on-failure rejects like never.
    mode = engine_mode(policy)
    if mode is ApprovalMode.UNLESS_TRUSTED:
        return "ask"
    if profile is PermissionProfile.READ_ONLY:
        inside = False
        rejection = PATCH_READ_ONLY
    elif profile is PermissionProfile.WORKSPACE_WRITE:
        inside = all(any(is_within(p, r) for r in roots) for p in action.written_paths())
        rejection = PATCH_OUTSIDE_PROJECT
    else:
        return "apply"
    if inside:
        return "apply"
    return rejection if mode is ApprovalMode.NEVER else "ask"


def patch_approval_digest(environment_id: str, patch: str, cwd: str) -> str:
    """Approval key digest of a patch: `{kind, environment_id, patch, cwd}`."""
    key = {"kind": "apply_patch", "environment_id": environment_id, "patch": patch, "cwd": cwd}
    text = json.dumps(key, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def offered_decisions(amendment: Sequence[str] | None) -> tuple[ApprovalDecision, ...]:
    """The decisions on offer; `approved_with_amendment` only with an amendment."""
    offer = [ApprovalDecision.APPROVED, ApprovalDecision.APPROVED_FOR_SESSION]
    if amendment:
        offer.append(ApprovalDecision.APPROVED_WITH_AMENDMENT)
    offer += [ApprovalDecision.DENIED, ApprovalDecision.ABORT]
    return tuple(offer)
