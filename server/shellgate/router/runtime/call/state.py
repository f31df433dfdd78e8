"""The call's state machine in one file (spec 06 §3, §4): every state and every transition.

h11's rule 1 holds here: everything that affects a call's states and transitions lives in
this file. The values are frozen; the Execute driver holds the current state and replaces
it with what a transition returns. Running one element ends in one `ElementOutcome`:

    Finished   it produced an answer for the model (successful or not)
    Parked     it waits for the user's decision (approval_required; the stream ends)
    Aborted    interrupted, or answered `abort`: nothing more runs

and the call moves between three states:

    Running(i) ──Finished, more to run──────────────► Running(i + 1)
    Running(i) ──Finished, the last or a failed one─► Ended(Finished)   a batch: one summary
    Running(i) ──Aborted────────────────────────────► Ended(Aborted)    the abort text
    Running(i) ──Parked(element i)──────────────────► AwaitingApproval  kept in the thread
    AwaitingApproval ──resume(decision on offer)────► Running(i), and the Answer for element i
    any state ──crash(text)─────────────────────────► Ended(Finished)   a bug still pairs

Anything else raises InvalidTransition (an ended or parked call takes no outcome, a parked
element must be the running one); a decision not on offer (`approvals/offer.py`, the one
check) is an INVALID_ARGUMENT and leaves the parked call as it was.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from shellgate.router.apply_patch.verify import ApplyPatchAction
from shellgate.router.output.texts import format_batch_output
from shellgate.router.pipeline import RouterTurn
from shellgate.router.projection import ProjectedCall, ShellCall, ShellElement
from shellgate.router.runtime.approvals.offer import offered_decisions, require_offered
from shellgate.router.runtime.approvals.vocabulary import ApprovalDecision
from shellgate.router.runtime.call.events import ApprovalKind, NetworkContext, Termination

__all__ = [
    "Aborted",
    "Answer",
    "ApprovalSubject",
    "Approved",
    "AwaitingApproval",
    "Call",
    "CallState",
    "Denied",
    "ElementOutcome",
    "Ended",
    "Finished",
    "InvalidTransition",
    "Parked",
    "Running",
    "advance",
    "crash",
    "resume",
]


class InvalidTransition(RuntimeError):
    """A transition the state machine does not have: a bug in the driver, never user input."""


# --- what one element's run ends in ---------------------------------------------------------


@dataclass(frozen=True)
class Finished:
    """An element (or a single-step call) produced its answer for the model."""

    text: str
    termination: Termination
    # The completed event's `success`; a batch stops at the first element without it.
    success: bool
    exit_code: int | None = None
    session_id: int | None = None
    original_token_count: int | None = None
    truncated: bool = False
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Aborted:
    """Interrupted or answered `abort`: nothing more runs, the call ends with the abort text."""

    # A unified session that outlives the abort (spec 06 §4) and its warnings.
    session_id: int | None = None
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class ApprovalSubject:
    """What the user is asked about (shown in approval_required, spec 06 §3.1)."""

    argv: tuple[str, ...]
    cwd: str
    environment_id: str
    element: ShellElement | None
    # The verified patch an apply_patch asks about (also the freeform tool's, which has no
    # element): the operator's view lists its files and diff from it.
    patch: ApplyPatchAction | None = None


@dataclass(frozen=True)
class Approved:
    """Run the waiting element now."""

    # An approved sandbox-denial retry runs without the sandbox; any other approval keeps
    # the sandbox rules (an approved require_escalated command is unsandboxed by them).
    unsandboxed: bool
    # The approval-key digest to remember for the thread (approved_for_session).
    remember: str | None = None
    # The prefix rule to append to the rules (approved_with_amendment).
    amendment: tuple[str, ...] | None = None
    # (st_dev, st_ino) of the cwd when the approval was asked for: the run starts there or
    # not at all (common/process/cwd_pin). None when none was taken (daemons, apply_patch).
    cwd_identity: tuple[int, int] | None = None


@dataclass(frozen=True)
class Denied:
    """Nothing runs; the element's runtime words the rejection for its tool."""


# What a decision means for the waiting element: a denied retry returns the sandboxed
# run's own result (Finished), `abort` ends the call (Aborted).
Answer = Approved | Denied | Finished | Aborted


@dataclass(frozen=True)
class Parked:
    """Element `element_index` waits for the user's decision on approval key `key`."""

    kind: ApprovalKind
    element_index: int
    reason: str
    amendment: tuple[str, ...] | None
    # The approval-key digest (spec 06 §8), remembered on approved_for_session.
    key: str
    subject: ApprovalSubject
    # The sandboxed run's result, returned as is when its retry is denied.
    retry_result: Finished | None = None
    # The cwd's (st_dev, st_ino) when the approval was asked for (local commands only).
    cwd_identity: tuple[int, int] | None = None
    # A network approval: the request the proxy holds (never parked: not encoded).
    network: NetworkContext | None = None

    def __post_init__(self) -> None:
        retry = self.kind is ApprovalKind.SANDBOX_RETRY
        if retry != (self.retry_result is not None):
            raise InvalidTransition("a sandbox retry, and only a retry, carries the sandboxed run")
        # A network approval's amendment is the `network_rule` line it would append.
        if self.amendment is not None and self.kind not in (
            ApprovalKind.EXEC_POLICY, ApprovalKind.NETWORK
        ):
            raise InvalidTransition(f"a {self.kind} approval proposes no amendment")

    @property
    def offered(self) -> tuple[ApprovalDecision, ...]:
        """The decisions the user may answer with (`approved_with_amendment` only with one)."""
        return offered_decisions(self.amendment)

    def answer(self, decision: ApprovalDecision) -> Answer:
        """What `decision` means for this element; INVALID_ARGUMENT when it is not on offer."""
        require_offered(decision, self.offered)
        retry = self.kind is ApprovalKind.SANDBOX_RETRY
        match decision:
            case ApprovalDecision.ABORT:
                return Aborted()
            case ApprovalDecision.DENIED:
                return self.retry_result if self.retry_result is not None else Denied()
            case ApprovalDecision.APPROVED_FOR_SESSION:
                # A retry is approved once: the key stays the command's, not the bypass.
                remember = None if retry else self.key
                return Approved(retry, remember=remember, cwd_identity=self.cwd_identity)
            case ApprovalDecision.APPROVED_WITH_AMENDMENT:
                return Approved(retry, amendment=self.amendment, cwd_identity=self.cwd_identity)
            case _:
                return Approved(retry, cwd_identity=self.cwd_identity)


ElementOutcome = Finished | Parked | Aborted


# --- the call's states -----------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """What a call is, fixed for its whole life (across a resume too)."""

    projected: ProjectedCall
    turn: RouterTurn
    # Monotonic start of the call (the abort text reports the elapsed time).
    started_at: float
    # The same start on the wall clock: a parked call resumed on another router keeps it.
    started_wall: float = 0.0
    # The wire request that projects to this call (item and turn): what a parked call
    # stores so that any router can re-project it (store/parked_codec).
    origin: bytes = b""

    @property
    def elements(self) -> tuple[ShellElement, ...]:
        """A shell call's elements; () for the single-step calls."""
        outcome = self.projected.outcome
        return outcome.elements if isinstance(outcome, ShellCall) else ()

    @property
    def size(self) -> int:
        """How many element outcomes the call takes (a single-step call takes one)."""
        return len(self.elements) if isinstance(self.projected.outcome, ShellCall) else 1

    @property
    def batch(self) -> bool:
        """A shell_command batch answers with one summary of its blocks."""
        outcome = self.projected.outcome
        return isinstance(outcome, ShellCall) and outcome.batch


@dataclass(frozen=True)
class Running:
    """Element `index` runs next; the finished ones left their blocks and warnings."""

    index: int = 0
    blocks: tuple[str, ...] = ()
    truncated: bool = False
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class AwaitingApproval:
    """A parked call, kept in the thread until resumed or expired (spec 06 §3.2)."""

    call: Call
    running: Running
    parked: Parked

    def __post_init__(self) -> None:
        if self.parked.element_index != self.running.index:
            raise InvalidTransition(
                f"element {self.parked.element_index} parked while {self.running.index} runs"
            )


@dataclass(frozen=True)
class Ended:
    """The call's one answer: a completed event follows (spec 06 §4)."""

    result: Finished | Aborted


CallState = Running | AwaitingApproval | Ended


# --- transitions -----------------------------------------------------------------------------


def advance(call: Call, state: CallState, outcome: ElementOutcome) -> CallState:
    """The state after the running element ended in `outcome`."""
    if not isinstance(state, Running):
        raise InvalidTransition(f"{type(state).__name__} takes no element outcome")
    if state.index >= call.size:
        raise InvalidTransition(f"no element {state.index} in a call of {call.size}")
    match outcome:
        case Parked():
            return AwaitingApproval(call, state, outcome)
        case Aborted(session_id=session_id, warnings=warnings):
            return Ended(Aborted(session_id, state.warnings + warnings))
        case Finished():
            return _after(call, state, outcome)


def _after(call: Call, state: Running, done: Finished) -> CallState:
    blocks = (*state.blocks, done.text)
    warnings = state.warnings + done.warnings
    truncated = state.truncated or done.truncated
    # Only a shell_command batch has several elements; an exec_command's non-zero exit is
    # still a successful answer (spec 05 §3.6) and it has nothing after it anyway.
    stopped = not done.success
    if not stopped and state.index + 1 < call.size:
        return Running(state.index + 1, blocks, truncated, warnings)
    if not call.batch:
        return Ended(replace(done, warnings=warnings))
    later = call.elements[state.index + 1 :] if stopped else ()
    text = format_batch_output(blocks, [el.handler.argv[-1] for el in later])
    summary = Finished(
        text, done.termination, success=not stopped, exit_code=done.exit_code,
        original_token_count=done.original_token_count, truncated=truncated,
        warnings=warnings,
    )  # fmt: skip
    return Ended(summary)


def resume(state: CallState, decision: ApprovalDecision) -> tuple[Running, Answer]:
    """Continue a parked call: the element it stopped at runs next, with the decision's answer.

    No element runs twice: the finished ones stay finished (spec 06 §3.3).
    """
    if not isinstance(state, AwaitingApproval):
        raise InvalidTransition(f"{type(state).__name__} waits for no decision")
    return state.running, state.parked.answer(decision)


def crash(state: CallState, text: str) -> Ended:
    """A bug stopped the call: the model still gets an answer, with the warnings so far."""
    match state:
        case Running(warnings=warnings) | AwaitingApproval(running=Running(warnings=warnings)):
            pass
        case Ended(result=result):
            warnings = result.warnings
    return Ended(Finished(text, Termination.TOOL_ERROR, success=False, warnings=warnings))
