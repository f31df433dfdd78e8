"""The mutable state of one call: what ran, what waits, and how to resume it (spec 06 §3.2)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from shellgate.router.pipeline import RouterTurn
from shellgate.router.projection import ProjectedCall
from shellgate.router.runtime.classic import OutputRoom
from shellgate.router.runtime.events import (
    ApprovalDecision,
    ApprovalKind,
    ExecuteEvent,
    Termination,
)
from shellgate.router.runtime.registry import EnvironmentRegistry
from shellgate.router.runtime.threads import ThreadState
from shellgate.router.service.rules_store import PolicyStore

__all__ = ["CallState", "ElementResult", "Emit", "RuntimeContext"]

Emit = Callable[[ExecuteEvent], None]


@dataclass
class RuntimeContext:
    """What the orchestrator needs besides the call: thread, environments, rules, identity."""

    thread: ThreadState
    environments: EnvironmentRegistry
    policy_store: PolicyStore | None = None
    instance_id: str = "shellgate"
    extra_writable_roots: tuple[str, ...] = ()
    rng: random.Random = field(default_factory=random.Random)

    @property
    def owner(self) -> str:
        """The process owner passed to daemons: router instance and thread."""
        return f"{self.instance_id}/{self.thread.thread_id}"


@dataclass
class ElementResult:
    """What one element (or the whole single call) produced."""

    text: str
    failed: bool
    termination: Termination
    success: bool | None = None
    exit_code: int | None = None
    session_id: int | None = None
    original_token_count: int | None = None
    truncated: bool = False
    warnings: list[str] = field(default_factory=list)
    # Stopped: either waiting for approval (the event was emitted) or aborted.
    paused: bool = False
    aborted: bool = False


@dataclass
class CallState:
    """A call in progress; parked in the thread while an approval is pending."""

    projected: ProjectedCall
    turn: RouterTurn
    # Monotonic start of the call (the abort text reports the elapsed time).
    started_at: float
    index: int = 0
    blocks: list[str] = field(default_factory=list)
    last: ElementResult | None = None
    truncated: bool = False
    warnings: list[str] = field(default_factory=list)
    # Set while parked: what the element at `index` waits for and which answers are valid.
    waiting: ApprovalKind | None = None
    offered: tuple[ApprovalDecision, ...] = ()
    amendment: tuple[str, ...] | None = None
    digest: str = ""
    # The sandboxed run's result, returned as is when a retry is denied.
    retry_result: ElementResult | None = None
    interrupt: asyncio.Event | None = None
    # Back-pressure from the client stream for classic output (None: never wait).
    output_room: OutputRoom | None = None
