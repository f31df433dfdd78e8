"""The operator desk: what an operator front (ApprovalService, the web console) sees and does.

An operator-routed approval (docs/approvals.md) parks a call and keeps its caller's stream
open; the desk lists such approvals across every replica (the shared store) and records one
decision per approval. Both the gRPC `ApprovalService` servicer and the console use only
this contract.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Protocol

from shellgate.router.runtime.approvals.vocabulary import ApprovalDecision

__all__ = ["OperatorDesk", "PendingView", "view_from_json", "view_to_json"]


@dataclass(frozen=True)
class PendingView:
    """One operator-routed approval waiting for a decision, as an operator sees it.

    Built in one place, `view.build_view`, redacted there; every front shows this value
    as it is: ListPendingApprovals, the console, the webhook body, the audit record.
    """

    approval_id: str
    thread_id: str  # the thread as the caller named it (not the owned key)
    call_id: str
    caller_subject: str
    tool: str  # shell / exec_command / apply_patch ...
    environment_id: str
    cwd: str
    command: str  # display text of the command
    summary: str  # the display summary (display/ stage)
    kind: str  # "exec_policy" | "sandbox_denied" ... (ApprovalKind name, lowercase)
    reason: str  # why approval is needed (justification / policy reason)
    segments: tuple[str, ...]  # policy projection B segments, each rendered as shell words
    matched_rules: tuple[str, ...]  # e.g. 'prefix_rule(["git","push"]) -> prompt'
    proposed_amendment: tuple[str, ...]  # argv prefix of the proposed amendment, () when none
    available_decisions: tuple[ApprovalDecision, ...]  # in display order (offer.py)
    created_at_ms: int  # wall clock, ms since epoch
    deadline_ms: int  # wall clock, ms since epoch
    # Invisible or reordering characters found (escaped as `\u202e` in every text above),
    # each as `U+202E RIGHT-TO-LEFT OVERRIDE`: the fronts show a warning when any.
    hidden_characters: tuple[str, ...] = ()
    # apply_patch: one line per file (`add P`, `update P`, `delete P`, `move P -> T`).
    patch_files: tuple[str, ...] = ()
    # apply_patch: the unified diff of its effect (bounded, a cut marked `… [N more …]`).
    patch_diff: str = ""
    # The env overrides that change what runs (`CommandElement.resolution_env`: PATH,
    # LD_PRELOAD …), one per line: `NAME=value`, or `unset NAME` for a removed one.
    env_overrides: tuple[str, ...] = ()
    # A live caller approval (TurnContext.live_network_approvals): on the board so any
    # replica can take the caller's answer, but hidden from operators; only
    # `caller_subject` decides it (`BoardDesk.answer`).
    caller_decides: bool = False


class OperatorDesk(Protocol):
    """What an operator front (gRPC ApprovalService, the web console) can do with pending approvals."""

    async def list_pending(self) -> list[PendingView]:
        """Every operator-routed approval still waiting, on any replica, oldest first."""
        ...

    async def decide(
        self, approval_id: str, decision: ApprovalDecision, operator_subject: str
    ) -> None:
        """Raises the common/errors.py ServiceErrors: not found, expired (deadline passed),
        self-approval (operator_subject == caller), not an operator, not on offer."""
        ...

    def is_operator(self, subject: str) -> bool:
        """Whether `subject` holds the operator role (token-file role or configured mTLS name)."""
        ...

    async def answer(self, approval_id: str, decision: ApprovalDecision, subject: str) -> None:
        """A live caller approval's answer by its own caller (else not the caller, not
        found, expired, not on offer)."""
        ...


def view_to_json(view: PendingView) -> str:
    """A view as compact JSON (what the shared store keeps)."""
    return json.dumps(dataclasses.asdict(view), separators=(",", ":"))


def view_from_json(text: str | bytes) -> PendingView:
    """A view back from its JSON (lists become tuples again, decisions typed again)."""
    data = json.loads(text)
    for spec in dataclasses.fields(PendingView):
        if isinstance(data.get(spec.name), list):
            data[spec.name] = tuple(data[spec.name])
    data["available_decisions"] = tuple(
        ApprovalDecision(d) for d in data.get("available_decisions", ())
    )
    return PendingView(**data)
