"""Network approvals: a running command's request to a host a `prompt` network_rule names.

The egress proxy holds the request and asks here (`environments/egress.egress_asker`, set
for each element a call runs). An approval for this call's element is built as any other
(`AwaitingApproval` of kind `network`, so `approvals/view.build_view` makes the operator's
view and `operator_wait` posts it, tells the audit log, the webhook and the caller's stream)
and waits on the operator route while the command keeps running. Decisions: approve once;
for the session (the thread remembers the host, so its next request is not asked about);
with the amendment (the `network_rule(…, decision="allow")` line is appended to the rules,
so the host joins the allow-list for every later command); deny or abort refuse the request
with Codex's text. A caller-routed approval ends the stream at `approval_required`, which
a running command cannot wait for: on the caller route such a host is refused, as Codex's
`never` would, unless the turn set `live_network_approvals` — then the same wait runs
with the caller as its only decider (`caller_decides`: a non-terminal `approval_pending`,
answered with ApprovalService.AnswerApproval on any replica).
"""

from __future__ import annotations

import asyncio
import hashlib
from typing import TYPE_CHECKING

from shellgate.common.egress.policy import Protocol
from shellgate.common.egress.routes import EgressRequest
from shellgate.router.policy import network_rule_line
from shellgate.router.policy.approval_policy import ApprovalMode
from shellgate.router.projection import CommandElement, ShellCall
from shellgate.router.runtime.approvals.route import approval_route
from shellgate.router.runtime.approvals.vocabulary import ApprovalDecision, ApprovalRoute
from shellgate.router.runtime.call.events import ApprovalKind, NetworkContext
from shellgate.router.runtime.call.state import ApprovalSubject, AwaitingApproval, Parked, Running

if TYPE_CHECKING:
    from shellgate.router.runtime.call.runner import CallRunner

__all__ = ["NetworkAsker", "network_asker", "network_key"]

_APPROVING = frozenset({
    ApprovalDecision.APPROVED, ApprovalDecision.APPROVED_FOR_SESSION,
    ApprovalDecision.APPROVED_WITH_AMENDMENT,
})  # fmt: skip
# network_rule's protocol words (amendments take http and https only).
_RULE_PROTOCOL = {Protocol.HTTP: "http", Protocol.HTTPS_CONNECT: "https"}
# Codex's NetworkApprovalProtocol words (app-server `networkApprovalContext.protocol`).
_CODEX_PROTOCOL = {
    Protocol.HTTP: "http", Protocol.HTTPS_CONNECT: "https", Protocol.SOCKS5_TCP: "socks5Tcp",
}  # fmt: skip


def network_key(environment_id: str, request: EgressRequest) -> str:
    """The session-grant digest of a host (per environment, host and protocol)."""
    text = f"network\0{environment_id}\0{request.host}\0{request.protocol.value}"
    return hashlib.sha256(text.encode()).hexdigest()


class NetworkAsker:
    """Who the proxy asks about element `index`'s requests, while that element runs.

    The waits run as tasks of their own (the proxy's connection awaits them): `close`, when
    the element ends for any reason (the caller left, an interrupt, the command ended),
    cancels those still waiting, which withdraws their approvals from the board.
    """

    def __init__(self, runner: CallRunner, index: int) -> None:
        self._runner = runner
        self._index = index
        self._waits: set[asyncio.Task[bool]] = set()
        self._closed = False

    async def ask(self, request: EgressRequest) -> bool:
        """Whether the request may go (an operator decided, or the thread's grant)."""
        if self._closed:
            return False
        wait = asyncio.ensure_future(_ask(self._runner, self._index, request))
        self._waits.add(wait)
        try:
            return await asyncio.shield(wait)
        except asyncio.CancelledError:
            if not wait.cancelled():
                raise  # the proxy itself is stopping
            return False
        finally:
            self._waits.discard(wait)

    def close(self) -> None:
        """The element ended: nobody is asked any more."""
        self._closed = True
        for wait in list(self._waits):
            wait.cancel()


def network_asker(runner: CallRunner, index: int) -> NetworkAsker:
    """The asker of element `index` (its `ask` is what the proxy calls)."""
    return NetworkAsker(runner, index)


async def _ask(runner: CallRunner, index: int, request: EgressRequest) -> bool:
    outcome = runner.call.projected.outcome
    state = runner.state
    if not isinstance(outcome, ShellCall) or not isinstance(state, Running):
        return False
    if state.index != index:
        # The element that spawned the command has ended (a unified-exec session that
        # outlived its call): nobody is there to ask.
        return False
    element = outcome.elements[index]
    if not isinstance(element, CommandElement):
        return False
    handler = element.handler
    key = network_key(handler.environment_id, request)
    thread = runner.ctx.thread
    if await thread.is_approved_for_session(key):
        return True
    if runner.call.turn.handler.approval_policy.mode is ApprovalMode.NEVER:
        return False  # `never` asks nobody
    operator = runner.ctx.operator
    route = approval_route(
        operator.settings if operator is not None else None, handler.environment_id,
        runner.call.turn.operator_route,
    )  # fmt: skip
    # The caller route holds the request only for a caller that answers live.
    live = route is ApprovalRoute.CALLER and runner.call.turn.live_network_approvals
    if route is not ApprovalRoute.OPERATOR and not live:
        return False
    protocol = _RULE_PROTOCOL.get(request.protocol)
    amendment = None
    # Codex's justification of a network amendment: "Allow <protocol> access to <host>".
    justification = f"Allow {request.protocol.value} access to {request.host}"
    if protocol is not None and runner.ctx.policy_store is not None:
        amendment = (network_rule_line(request.host, protocol, "allow", justification),)
    reason = f"network access to {request.host}:{request.port} ({request.protocol.value})"
    context = NetworkContext(request.host, _CODEX_PROTOCOL[request.protocol], request.port)
    parked = Parked(
        ApprovalKind.NETWORK, index, reason, amendment, key,
        ApprovalSubject(handler.argv, handler.cwd, handler.environment_id, element),
        network=context,
    )  # fmt: skip
    decided = await runner.await_operator(
        AwaitingApproval(runner.call, state, parked), caller_decides=live
    )
    if decided.decision is ApprovalDecision.APPROVED_FOR_SESSION:
        await thread.approve_for_session(key)
    elif decided.decision is ApprovalDecision.APPROVED_WITH_AMENDMENT:
        store = runner.ctx.policy_store
        assert store is not None and protocol is not None
        await asyncio.to_thread(
            store.append_network_rule, request.host, protocol, "allow", justification
        )
    return decided.decision in _APPROVING
