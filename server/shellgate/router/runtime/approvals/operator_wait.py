"""Operator-routed approvals (docs/approvals.md): the waiting call and the desk.

A call whose approval is operator-routed (`route.approval_route`) does not end its stream:
`CallRunner` asks `OperatorApprovals.wait`, which builds the approval's one view
(`view.build_view`, redacted), publishes it on the board (shared by every
replica), emits `approval_pending`, then `approval_waiting` keepalives until an operator
settles it (`BoardDesk.decide`, on any replica), the deadline's fallback settles it, or
the caller leaves (the approval is withdrawn: nothing runs). The waiting call wakes on the
board's notice and re-reads its entry every `poll_ms` in case a notice is lost.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from shellgate.common.errors import (
    AlreadyDecidedError,
    ApprovalExpiredError,
    NotOperatorError,
    NotTheCallerError,
    SelfApprovalError,
    UnknownApprovalError,
)
from shellgate.common.tracing import record_approval_wait
from shellgate.router.runtime.approvals.board import BoardEntry, OperatorBoard
from shellgate.router.runtime.approvals.desk import PendingView
from shellgate.router.runtime.approvals.offer import require_offered
from shellgate.router.runtime.approvals.settings import OperatorSettings
from shellgate.router.runtime.approvals.view import Redact, build_view
from shellgate.router.runtime.approvals.vocabulary import (
    ApprovalDecision,
    BoardStatus,
    DecisionSource,
    SettleOutcome,
)
from shellgate.router.runtime.audit import AuditSink, pending_record
from shellgate.router.runtime.call.events import (
    ApprovalPendingEvent,
    ApprovalRequiredEvent,
    ApprovalWaitingEvent,
    ExecuteEvent,
)
from shellgate.router.runtime.call.state import AwaitingApproval

__all__ = ["BoardDesk", "Decided", "OperatorApprovals"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Decided:
    """How an operator-routed approval ended: the decision, its source and who made it."""

    decision: ApprovalDecision
    source: DecisionSource  # OPERATOR | DEADLINE | INTERRUPT
    who: str = ""


def _now_ms(wall: Callable[[], float]) -> int:
    return int(wall() * 1000)


class OperatorApprovals:
    """The router's operator route: its settings, and the waiting call's loop."""

    def __init__(
        self,
        settings: OperatorSettings,
        board: OperatorBoard,
        *,
        instance_id: str,
        redact: Redact | None = None,
        audit: AuditSink | None = None,
        on_pending: Callable[[PendingView], None] | None = None,
        on_decided: Callable[[DecisionSource, ApprovalDecision], None] | None = None,
        on_settled: Callable[[PendingView, Decided | None], None] | None = None,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.board = board
        self.instance_id = instance_id
        self._redact = redact
        self._audit = audit
        self._on_pending = on_pending
        # (source, decision) of every settled approval (metrics).
        self.on_decided = on_decided
        # How each approval this router waited on ended (None: the caller left): the webhook.
        self._on_settled = on_settled
        self._wall = wall
        # Approvals waiting in this router's streams (the pending gauge).
        self.waiting = 0

    async def wait(
        self,
        awaiting: AwaitingApproval,
        details: ApprovalRequiredEvent,
        caller_subject: str,
        emit: Callable[[ExecuteEvent], None],
        interrupt: asyncio.Event,
        *,
        caller_decides: bool = False,
    ) -> Decided:
        """Publish the approval, keep the stream alive, return how it was settled.

        `caller_decides`: a live caller approval — the same board, deadline, audit and
        metrics, but only the caller answers it and operators (lists, webhook) never see it.
        Cancelled (the caller left): the approval is withdrawn and nothing runs.
        """
        created = _now_ms(self._wall)
        deadline = created + self.settings.deadline_ms
        view = build_view(
            awaiting, approval_id=details.approval_id, caller_subject=caller_subject,
            created_at_ms=created, deadline_ms=deadline, redact=self._redact,
        )  # fmt: skip
        if caller_decides:
            view = replace(view, caller_decides=True)
        approval_id = view.approval_id
        await self.board.post(BoardEntry(view, self.instance_id))
        self.waiting += 1
        settled = False
        decided: Decided | None = None
        try:
            if self._audit is not None:
                self._audit.record(pending_record(view, details.element_index))
            if self._on_pending is not None and not caller_decides:
                self._on_pending(view)
            emit(ApprovalPendingEvent(
                replace(details, expires_in_ms=deadline - created), deadline, caller_decides
            ))  # fmt: skip
            decided = await self._settled(view, emit, interrupt)
            settled = decided.source is not DecisionSource.INTERRUPT
            # The wait stays inside this Execute: a child span of it, no link needed.
            record_approval_wait(
                created / 1000, self._wall(), decided.decision.value, decided.source.value
            )
            if self.on_decided is not None:
                self.on_decided(decided.source, decided.decision)
            return decided
        finally:
            self.waiting -= 1
            self.board.release(approval_id)
            if self._on_settled is not None and not caller_decides:
                self._on_settled(view, decided)
            if not settled:
                # The caller left or interrupted: no operator may decide it any more. Shielded:
                # the call's task is being cancelled, and a second cancel must not leave the
                # entry on the board (other replicas would list it until its deadline).
                await asyncio.shield(self.board.withdraw(approval_id))

    async def _settled(
        self, view: PendingView, emit: Callable[[ExecuteEvent], None], interrupt: asyncio.Event
    ) -> Decided:
        settings, approval_id = self.settings, view.approval_id
        next_keepalive = _now_ms(self._wall) + settings.keepalive_ms
        # Bounded by the deadline: every turn either sleeps ≤ poll_ms or settles.
        while True:
            entry = await self.board.get(approval_id)
            if entry is None:
                # Withdrawn by nobody we know of (the store lost it): the deadline's rule.
                return self._fallback()
            if entry.status is BoardStatus.DECIDED and entry.decision is not None:
                source = DecisionSource.CALLER if view.caller_decides else DecisionSource.OPERATOR
                return Decided(entry.decision, source, entry.operator)
            if entry.status is not BoardStatus.PENDING:
                return self._fallback()
            if interrupt.is_set():
                return Decided(ApprovalDecision.ABORT, DecisionSource.INTERRUPT)
            now = _now_ms(self._wall)
            if now >= view.deadline_ms:
                fallback = self._fallback()
                # The board's operator field names the deadline as the settler.
                result = await self.board.settle(
                    approval_id, BoardStatus.EXPIRED, fallback.decision, DecisionSource.DEADLINE,
                    None,
                )  # fmt: skip
                if result.outcome is SettleOutcome.OK:
                    return fallback
                continue  # an operator's decision won the race: read it
            if now >= next_keepalive:
                emit(ApprovalWaitingEvent(approval_id, view.deadline_ms - now))
                next_keepalive = now + settings.keepalive_ms
            left = min(settings.poll_ms, next_keepalive - now, view.deadline_ms - now)
            await self.board.changed(approval_id, max(left, 1) / 1000)

    def _fallback(self) -> Decided:
        return Decided(self.settings.fallback, DecisionSource.DEADLINE)


class BoardDesk:
    """The OperatorDesk of a router: lists and decides on the board (any replica's calls)."""

    def __init__(
        self,
        board: OperatorBoard,
        is_operator: Callable[[str], bool],
        *,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self._board = board
        self._is_operator = is_operator
        self._wall = wall

    def is_operator(self, subject: str) -> bool:
        """Whether `subject` holds the operator role."""
        return self._is_operator(subject)

    async def list_pending(self) -> list[PendingView]:
        """Every operator approval still waiting, on any replica, oldest first."""
        entries = await self._board.pending(_now_ms(self._wall))
        # A live caller approval is the caller's to answer: operators do not see it.
        return [e.view for e in entries if not e.view.caller_decides]

    async def decide(
        self, approval_id: str, decision: ApprovalDecision, operator_subject: str
    ) -> None:
        """Settle one approval as `operator_subject` (exactly one decision wins)."""
        if not self._is_operator(operator_subject):
            raise NotOperatorError(f"{operator_subject!r} does not hold the operator role")
        entry = await self._board.get(approval_id)
        if entry is None or entry.view.caller_decides:
            raise UnknownApprovalError(f"unknown or withdrawn approval_id {approval_id}")
        if entry.view.caller_subject == operator_subject:
            raise SelfApprovalError("an operator may not decide a call it made itself")
        await self._settle(entry, decision, operator_subject)

    async def answer(self, approval_id: str, decision: ApprovalDecision, subject: str) -> None:
        """Settle a live caller approval as its caller `subject` (no one else may)."""
        entry = await self._board.get(approval_id)
        if entry is None or not entry.view.caller_decides:
            raise UnknownApprovalError(f"unknown or withdrawn approval_id {approval_id}")
        if entry.view.caller_subject != subject:
            raise NotTheCallerError("only the call's own caller answers its live approval")
        await self._settle(entry, decision, subject)

    async def _settle(self, entry: BoardEntry, decision: ApprovalDecision, who: str) -> None:
        approval_id = entry.view.approval_id
        require_offered(decision, entry.view.available_decisions)
        result = await self._board.settle(
            approval_id, BoardStatus.DECIDED, decision, who, _now_ms(self._wall)
        )
        match result.outcome:
            case SettleOutcome.OK:
                return
            case SettleOutcome.MISSING:
                raise UnknownApprovalError(f"unknown or withdrawn approval_id {approval_id}")
            case SettleOutcome.EXPIRED:
                raise ApprovalExpiredError(
                    f"approval {approval_id} passed its deadline (the deadline fallback applied)"
                )
            case _:
                raise AlreadyDecidedError(f"approval {approval_id} was already decided")
