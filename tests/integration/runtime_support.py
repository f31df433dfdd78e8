"""Shared helpers of the runtime integration tests: turns, items, and an event runner."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shellgate.common.env_policy import ShellEnvironmentPolicy
from shellgate.router.apply_patch import LocalFileSystem
from shellgate.router.decode.tools import ConfigShellToolType, Features, ToolsConfig
from shellgate.router.handler.environments import TurnEnvironment
from shellgate.router.handler.plan import Turn
from shellgate.router.output.truncation import TruncationPolicy
from shellgate.router.pipeline import HostContext, RouterTurn, project
from shellgate.router.policy import SandboxProfile
from shellgate.router.projection import ProjectedCall
from shellgate.router.runtime.call.context import RuntimeContext
from shellgate.router.runtime.call.events import (
    ApprovalDecision,
    ApprovalRequiredEvent,
    CompletedEvent,
    ExecuteEvent,
)
from shellgate.router.runtime.call.execute import execute_call, resume_call
from shellgate.router.runtime.environments.registry import (
    EnvironmentRegistry,
    LocalEnvironment,
    gather_host_shell_facts,
)
from shellgate.router.runtime.threads.registry import InMemoryThreadStore, ThreadState
from shellgate.router.runtime.threads.sessions import SessionManager
from shellgate.router.service.rules_store import PolicyStore
from shellgate.router.service.wire.turn import approval_policy

_FACTS = gather_host_shell_facts()
DEFAULT_TRUNCATION = TruncationPolicy.tokens(10_000)


def make_turn(
    cwd: str,
    *,
    approval: str = "never",
    profile: SandboxProfile = SandboxProfile.DISABLED,
    truncation: TruncationPolicy = DEFAULT_TRUNCATION,
    thread_id: str = "t-1",
    environments: Sequence[TurnEnvironment] | None = None,
) -> RouterTurn:
    """A turn on the local environment (or the given ones) with both shell tools."""
    envs = tuple(environments) if environments else (TurnEnvironment("local", cwd),)
    return RouterTurn(
        thread_id=thread_id,
        handler=Turn(environments=envs, approval_policy=approval_policy(approval, None), features=Features(),
                     host=_FACTS),
        tools=ToolsConfig(model_shell_type=ConfigShellToolType.DEFAULT),
        permission_profile=profile,
        env_policy=ShellEnvironmentPolicy(),
        truncation=truncation,
    )  # fmt: skip


def call_item(name: str, args: dict[str, Any] | str, call_id: str = "call-1") -> str:
    """A function_call output item as raw JSON text."""
    arguments = args if isinstance(args, str) else json.dumps(args)
    return json.dumps(
        {"type": "function_call", "name": name, "arguments": arguments, "call_id": call_id}
    )


@dataclass
class Harness:
    """One thread, the local environment, a rules folder, and a runner.

    `spawner` replaces the local environment (real bash) with another one under the same id,
    e.g. a `tests.scripted_spawner.ScriptedSpawner`: then no process is started and the
    harness is a unit-tier tool.
    """

    tmp: Path
    approval: str = "never"
    profile: SandboxProfile = SandboxProfile.DISABLED
    truncation: TruncationPolicy = DEFAULT_TRUNCATION
    rules: str = ""
    extra_envs: list[Any] = field(default_factory=list)
    turn_envs: list[TurnEnvironment] | None = None
    spawner: Any = None

    async def __aenter__(self) -> Harness:
        rules_dir = self.tmp / "rules"
        rules_dir.mkdir(exist_ok=True)
        if self.rules:
            (rules_dir / "base.rules").write_text(self.rules)
        self.store = PolicyStore([rules_dir])
        self.store.load_initial()
        self.threads = InMemoryThreadStore(
            session_factory=lambda _t: SessionManager(deterministic_ids=True)
        )
        self.thread: ThreadState = await self.threads.get_or_create("t-1")
        # The registry only keys environments by id and closes them: a scripted spawner
        # stands in for the local one.
        self.local = self.spawner or LocalEnvironment(cwd=str(self.tmp))
        self.registry = EnvironmentRegistry(self.local, self.extra_envs)
        self.ctx = RuntimeContext(self.thread, self.registry, self.store, instance_id="test")
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.threads.aclose()
        await self.registry.aclose()

    def turn(self) -> RouterTurn:
        """The harness's turn."""
        return make_turn(
            str(self.tmp), approval=self.approval, profile=self.profile,
            truncation=self.truncation, environments=self.turn_envs,
        )  # fmt: skip

    def host(self) -> HostContext:
        """Host facts for projection."""
        return HostContext(
            policy=self.store.policy,
            parent_env=dict(os.environ),
            filesystem=lambda _env: LocalFileSystem(),
            # Lost sessions still "exist" so write_stdin reaches the runtime's lost text.
            session_exists=lambda sid: (
                self.thread.sessions.get(sid) is not None
                or self.thread.sessions.lost_environment(sid) is not None
            ),
        )

    async def run(
        self, name: str, args: dict[str, Any] | str, call_id: str = "call-1"
    ) -> list[ExecuteEvent]:
        """Project and execute one call; all events.

        Shell calls default to `login: false`: a login shell on this host sources
        ~/.bashrc, whose `pyenv rehash` can wait a minute on a stale lock file.
        """
        if name in ("shell_command", "exec_command") and isinstance(args, dict):
            args = {"login": False, **args}
        turn = self.turn()
        projected = project(call_item(name, args, call_id), turn, self.host())
        # The parked call's stored request (the servicer stores the wire request instead).
        origin = json.dumps([name, args, call_id]).encode()
        return [e async for e in execute_call(projected, turn, self.ctx, origin)]

    async def _reproject(self, origin: bytes) -> tuple[ProjectedCall, RouterTurn]:
        stored = json.loads(origin)
        # [name, args, call_id] from `run`, or {"item": raw JSON} from `origin_of`.
        item = stored["item"] if isinstance(stored, dict) else call_item(*stored)
        turn = self.turn()
        return project(item, turn, self.host()), turn

    @staticmethod
    def origin_of(item: str) -> bytes:
        """The stored request of a raw item executed directly with `execute_call`."""
        return json.dumps({"item": item}).encode()

    async def resume(self, approval_id: str, decision: ApprovalDecision) -> list[ExecuteEvent]:
        """Resume a parked call (re-projected from its stored request, as on any router)."""
        return [e async for e in resume_call(approval_id, decision, self.ctx, self._reproject)]


def completed(events: Sequence[ExecuteEvent]) -> CompletedEvent:
    """The single completed event, which must be the last one."""
    done = [e for e in events if isinstance(e, CompletedEvent)]
    assert len(done) == 1, events
    assert events[-1] is done[0]
    return done[0]


def approval(events: Sequence[ExecuteEvent]) -> ApprovalRequiredEvent:
    """The approval_required event, which must be the last one (and no completed)."""
    assert isinstance(events[-1], ApprovalRequiredEvent), events
    assert not any(isinstance(e, CompletedEvent) for e in events)
    return events[-1]


def normalise(text: str) -> str:
    """Mask chunk id, wall time and session id (the only nondeterministic parts)."""
    text = re.sub(r"^Chunk ID: [0-9a-f]{6}$", "Chunk ID: XXXXXX", text, flags=re.M)
    text = re.sub(r"^Wall time: [0-9.]+ seconds$", "Wall time: W seconds", text, flags=re.M)
    return re.sub(r"session ID \d+", "session ID N", text)
