"""What a runtime runs with: the thread's services, and one element's request."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol

from shellgate.common.env_policy import ShellEnvironmentPolicy
from shellgate.common.errors import EnvironmentNotFoundError
from shellgate.common.process.base import OutputChunk
from shellgate.router.decode.rust_text import debug_str
from shellgate.router.envelope import ExecutionEnvelope
from shellgate.router.output.texts import exec_command_failed
from shellgate.router.pipeline import RouterTurn
from shellgate.router.runtime.approvals.vocabulary import DecisionSource
from shellgate.router.runtime.audit import AuditSink
from shellgate.router.runtime.call.events import ExecuteEvent, OutputEvent, Termination
from shellgate.router.runtime.call.state import Finished
from shellgate.router.runtime.environments.registry import EnvironmentRegistry
from shellgate.router.runtime.environments.spawn import EnvironmentUnavailableError, Spawner
from shellgate.router.runtime.threads.registry import ThreadState
from shellgate.router.runtime.threads.unified_process import OutputListener

if TYPE_CHECKING:
    from shellgate.router.runtime.approvals.operator_wait import OperatorApprovals

__all__ = [
    "AmendmentSink",
    "Emit",
    "OutputRoom",
    "RuntimeContext",
    "RuntimeRequest",
    "rejected_text",
]

Emit = Callable[[ExecuteEvent], None]

# Given by the Execute driver: returns an awaitable while the client is behind (the wait is
# bounded by the driver), None when there is room.
OutputRoom = Callable[[], Awaitable[None] | None]


class AmendmentSink(Protocol):
    """Where an approved prefix-rule amendment goes (`service/rules_store.PolicyStore`):
    a protocol, so the runtime never imports the service layer."""

    # Scaled mode: publishes the amendment to every replica (None on one router).
    share: Callable[[tuple[str, ...]], Awaitable[None]] | None

    def append_prefix_rule(self, prefix: Sequence[str]) -> object:
        """Persist the approved rule and apply it live (blocking: run off the loop)."""
        ...

    def append_network_rule(
        self, host: str, protocol: str, decision: str, justification: str | None = None
    ) -> object:
        """Persist an approved `network_rule(…)` line and apply it (blocking: off the loop)."""
        ...


def rejected_text(message: str) -> str:
    """`exec_command failed: CreateProcess { message: "Rejected(\\"…\\")" }`."""
    inner = f"Rejected({debug_str(message)})"
    return exec_command_failed(f"CreateProcess {{ message: {debug_str(inner)} }}")


@dataclass
class RuntimeContext:
    """What the orchestrator needs besides the call: thread, environments, rules, identity."""

    thread: ThreadState
    environments: EnvironmentRegistry
    policy_store: AmendmentSink | None = None
    instance_id: str = "shellgate"
    extra_writable_roots: tuple[str, ...] = ()
    rng: random.Random = field(default_factory=random.Random)
    # Where decisions and outcomes are recorded (None: no audit log configured).
    audit: AuditSink | None = None
    # The authenticated caller (audit records name who approved).
    caller_subject: str = ""
    # The operator route (docs/approvals.md); None: every approval goes to the caller.
    operator: OperatorApprovals | None = None

    @property
    def owner(self) -> str:
        """The process owner passed to daemons: router instance and thread."""
        return f"{self.instance_id}/{self.thread.thread_id}"


@dataclass(frozen=True)
class RuntimeRequest:
    """One element's run: the call it belongs to, where its events go, what stops or paces it."""

    ctx: RuntimeContext
    turn: RouterTurn
    call_id: str
    element_index: int
    emit: Emit
    # Set by Interrupt (spec 06 §4); None outside an Execute stream.
    interrupt: asyncio.Event | None
    # Back-pressure from the client stream for classic output (None: never wait).
    output_room: OutputRoom | None
    # The call is exec_command: refusals use its `exec_command failed: …` layout.
    exec_frame: bool
    # The tool's name (audit records); empty when unknown.
    tool: str = ""
    # Who answered the approval this element resumes from: CALLER (ResumeCall),
    # OPERATOR, DEADLINE or INTERRUPT (operator route), and the subject that decided.
    approval_source: DecisionSource = DecisionSource.CALLER
    approver: str = ""
    # (st_dev, st_ino) of the cwd the element was approved in: its spawn starts there or
    # not at all (common/process/cwd_pin). None when it resumes from no approval.
    approved_cwd: tuple[int, int] | None = None

    def spawner(self, environment_id: str) -> Spawner:
        """The environment that runs the element; a missing one is unavailable (06 §5)."""
        try:
            return self.ctx.environments.get(environment_id)
        except EnvironmentNotFoundError:
            raise EnvironmentUnavailableError(environment_id, "not configured") from None

    def env_policy(self, envelope: ExecutionEnvelope) -> ShellEnvironmentPolicy:
        """The turn's shell environment policy with the envelope's `set` overrides (05 §5.5)."""
        return replace(self.turn.env_policy, set_pairs=envelope.explicit_env_overrides)

    def listener(self) -> OutputListener:
        """Streams the element's output chunks as output events."""
        index, emit = self.element_index, self.emit

        def on_output(chunk: OutputChunk, seq: int) -> None:
            emit(OutputEvent(index, chunk.stream, seq, chunk.data))

        return on_output

    def refusal(self, text: str) -> str:
        """A refusal as the model sees it: wrapped in `Rejected(…)` for exec_command."""
        return rejected_text(text) if self.exec_frame else text

    def unavailable(self, exc: EnvironmentUnavailableError) -> Finished:
        """The answer when the element's environment cannot be reached (spec 06 §5)."""
        text = rejected_text(str(exc)) if self.exec_frame else f"execution error: {exc}"
        return Finished(text, Termination.ENVIRONMENT_LOST, success=False)
