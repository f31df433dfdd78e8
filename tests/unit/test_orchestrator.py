"""The orchestrator's sequence over an in-process ToolRuntime: approve, sandbox, attempt, retry."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from shellgate.common.sandbox import SandboxMode, SandboxSpec
from shellgate.router.approval_identity import ApplyPatchApprovalKey
from shellgate.router.envelope import ExecutionEnvelope
from shellgate.router.pipeline import HostContext, project
from shellgate.router.policy import Policy, SandboxProfile
from shellgate.router.projection import CommandElement, ShellCall
from shellgate.router.runtime.call.context import RuntimeContext, RuntimeRequest
from shellgate.router.runtime.call.events import ApprovalKind, ExecuteEvent, Termination
from shellgate.router.runtime.call.orchestrator import (
    SANDBOX_RETRY_REASON,
    Ask,
    Gate,
    Proceed,
    Refuse,
    SandboxAuto,
    SandboxDenied,
    SandboxForbid,
    SandboxPreference,
    SessionApproval,
    orchestrate,
)
from shellgate.router.runtime.call.state import (
    Aborted,
    Answer,
    ApprovalSubject,
    Approved,
    Denied,
    ElementOutcome,
    Finished,
    Parked,
)
from shellgate.router.runtime.environments.registry import EnvironmentRegistry
from shellgate.router.runtime.environments.spawn import NO_SANDBOX, EnvironmentUnavailableError
from shellgate.router.runtime.threads.registry import InMemoryThreadStore
from shellgate.router.service.rules_store import PolicyStore

from tests.integration.runtime_support import call_item, make_turn

KEY = ApplyPatchApprovalKey("local", "patch", "/w")
SUBJECT = ApprovalSubject(("apply_patch",), "/w", "local", None)
OK = Finished("ran", Termination.EXITED, True, exit_code=0)
SANDBOXED = Finished("Exit code: 1\nRead-only file system", Termination.EXITED, False, exit_code=1)
REJECTED = Finished("rejected by the fake user", Termination.REJECTED, False)
Attempt = Finished | Aborted | SandboxDenied | Exception


def _envelope(cwd: str) -> ExecutionEnvelope:
    turn = make_turn(cwd)
    host = HostContext(policy=Policy(), parent_env={"PATH": "/usr/bin:/bin"})
    outcome = project(call_item("shell_command", {"command": "ls", "login": False}), turn, host)
    assert isinstance(outcome.outcome, ShellCall)
    element = outcome.outcome.elements[0]
    assert isinstance(element, CommandElement)
    return element.envelope


@dataclass
class FakeRuntime:
    """A ToolRuntime with a given gate and attempts; it records what it was asked to do."""

    gate: Gate = field(default_factory=Proceed)
    attempts: list[Attempt] = field(default_factory=lambda: [OK])
    envelope: ExecutionEnvelope | None = None
    # Whether the gate reads the session cache first (as apply_patch's does).
    cache_first: bool = False
    sandboxes: list[SandboxSpec] = field(default_factory=list)
    cache_reads: int = 0

    async def approval(self, approved_for_session: SessionApproval) -> Gate:
        if self.cache_first:
            self.cache_reads += 1
            if await approved_for_session():
                return Proceed()
        return self.gate

    def approval_key(self) -> ApplyPatchApprovalKey:
        return KEY

    def approval_subject(self) -> ApprovalSubject:
        return SUBJECT

    def rejected_by_user(self) -> Finished:
        return REJECTED

    def sandbox_preference(self) -> SandboxPreference:
        return SandboxForbid() if self.envelope is None else SandboxAuto(self.envelope)

    async def run(self, sandbox: SandboxSpec) -> Finished | Aborted | SandboxDenied:
        self.sandboxes.append(sandbox)
        attempt = self.attempts.pop(0)
        if isinstance(attempt, Exception):
            raise attempt
        return attempt



def _run(
    tmp_path: Path,
    scenario: Callable[[RuntimeRequest, PolicyStore], Awaitable[None]],
    *,
    approval: str = "on-request",
    profile: SandboxProfile = SandboxProfile.WORKSPACE_WRITE,
    exec_frame: bool = False,
) -> None:
    async def main() -> None:
        rules = tmp_path / "rules"
        rules.mkdir(exist_ok=True)
        store = PolicyStore([rules])
        store.load_initial()
        threads = InMemoryThreadStore()
        try:
            thread = await threads.get_or_create("t")
            ctx = RuntimeContext(thread, EnvironmentRegistry(None), store,
                                 extra_writable_roots=("/extra",))  # fmt: skip
            events: list[ExecuteEvent] = []
            turn = make_turn(str(tmp_path), approval=approval, profile=profile)
            request = RuntimeRequest(ctx, turn, "c", 2, events.append, None, None, exec_frame)
            await scenario(request, store)
            assert events == []
        finally:
            await threads.aclose()

    asyncio.run(main())


async def _go(runtime: FakeRuntime, request: RuntimeRequest, answer: Answer | None = None
              ) -> ElementOutcome:  # fmt: skip
    return await orchestrate(runtime, request, answer)


def test_refused_never_runs(tmp_path: Path) -> None:
    async def scenario(request: RuntimeRequest, _: PolicyStore) -> None:
        runtime = FakeRuntime(gate=Refuse(REJECTED))
        assert await _go(runtime, request) is REJECTED
        assert runtime.sandboxes == []

    _run(tmp_path, scenario)


def test_ask_parks_with_the_key_and_subject(tmp_path: Path) -> None:
    async def scenario(request: RuntimeRequest, _: PolicyStore) -> None:
        runtime = FakeRuntime(gate=Ask(ApprovalKind.EXEC_POLICY, "why", ("touch",)))
        parked = await _go(runtime, request)
        assert parked == Parked(ApprovalKind.EXEC_POLICY, 2, "why", ("touch",), KEY.digest(),
                                SUBJECT)  # fmt: skip
        assert runtime.sandboxes == []

    _run(tmp_path, scenario)


def test_a_session_approval_runs_under_the_turns_sandbox(tmp_path: Path) -> None:
    async def scenario(request: RuntimeRequest, _: PolicyStore) -> None:
        envelope = _envelope(str(tmp_path))
        runtime = FakeRuntime(gate=Ask(ApprovalKind.APPLY_PATCH, ""), envelope=envelope,
                              cache_first=True)  # fmt: skip
        assert isinstance(await _go(runtime, request), Parked)
        await request.ctx.thread.approve_for_session(KEY.digest())
        assert await _go(runtime, request) is OK
        roots = (envelope.sandbox_cwd, "/tmp", "/extra")
        assert runtime.sandboxes == [SandboxSpec(SandboxMode.WORKSPACE_WRITE, roots, False)]
        assert runtime.cache_reads == 2

    _run(tmp_path, scenario)


@pytest.mark.parametrize(
    ("profile", "bypass", "mode"),
    [
        (SandboxProfile.READ_ONLY, False, SandboxMode.READ_ONLY),
        (SandboxProfile.READ_ONLY, True, SandboxMode.NONE),
        (SandboxProfile.DISABLED, False, SandboxMode.NONE),
    ],
)
def test_first_attempt_sandbox(
    tmp_path: Path, profile: SandboxProfile, bypass: bool, mode: SandboxMode
) -> None:
    async def scenario(request: RuntimeRequest, _: PolicyStore) -> None:
        runtime = FakeRuntime(gate=Proceed(bypass), envelope=_envelope(str(tmp_path)))
        assert await _go(runtime, request) is OK
        assert [s.mode for s in runtime.sandboxes] == [mode]
        # A runtime that forbids sandboxing is never wrapped.
        forbid = FakeRuntime(gate=Proceed(bypass))
        assert await _go(forbid, request) is OK
        assert forbid.sandboxes == [NO_SANDBOX]

    _run(tmp_path, scenario, profile=profile)


@pytest.mark.parametrize("approval", ["on-request", "on-failure"])
def test_a_sandbox_denial_offers_the_retry(tmp_path: Path, approval: str) -> None:
    async def scenario(request: RuntimeRequest, _: PolicyStore) -> None:
        runtime = FakeRuntime(attempts=[SandboxDenied(SANDBOXED)],
                              envelope=_envelope(str(tmp_path)))  # fmt: skip
        parked = await _go(runtime, request)
        assert parked == Parked(ApprovalKind.SANDBOX_RETRY, 2, SANDBOX_RETRY_REASON, None,
                                KEY.digest(), SUBJECT, retry_result=SANDBOXED)  # fmt: skip
        assert [s.mode for s in runtime.sandboxes] == [SandboxMode.READ_ONLY]
        # Approved: the retry runs without the sandbox, and the gate is not asked again.
        retry = FakeRuntime(gate=Refuse(REJECTED), envelope=_envelope(str(tmp_path)))
        assert await _go(retry, request, parked.answer(parked.offered[0])) is OK
        assert retry.sandboxes == [NO_SANDBOX]
        # Denied: the sandboxed run's own output, nothing runs.
        denied = FakeRuntime(gate=Refuse(REJECTED))
        assert await _go(denied, request, parked.answer(parked.offered[-2])) is SANDBOXED
        assert denied.sandboxes == []

    _run(tmp_path, scenario, approval=approval, profile=SandboxProfile.READ_ONLY)


def test_no_retry_under_never(tmp_path: Path) -> None:
    async def scenario(request: RuntimeRequest, _: PolicyStore) -> None:
        runtime = FakeRuntime(attempts=[SandboxDenied(SANDBOXED)],
                              envelope=_envelope(str(tmp_path)))  # fmt: skip
        assert await _go(runtime, request) is SANDBOXED

    _run(tmp_path, scenario, approval="never", profile=SandboxProfile.READ_ONLY)


def test_answers_of_a_resumed_element(tmp_path: Path) -> None:
    async def scenario(request: RuntimeRequest, store: PolicyStore) -> None:
        thread = request.ctx.thread
        # Denied and abort: nothing runs; a denied retry's result comes back as is.
        for answer, expected in ((Denied(), REJECTED), (Aborted(), Aborted()), (OK, OK)):
            runtime = FakeRuntime(gate=Refuse(REJECTED))
            assert await _go(runtime, request, answer) == expected
            assert runtime.sandboxes == []
        # Approved for the session: the key is remembered, the sandbox rules still apply.
        runtime = FakeRuntime(gate=Refuse(REJECTED), envelope=_envelope(str(tmp_path)))
        assert not await thread.is_approved_for_session(KEY.digest())
        assert await _go(runtime, request, Approved(False, remember=KEY.digest())) is OK
        assert await thread.is_approved_for_session(KEY.digest())
        assert [s.mode for s in runtime.sandboxes] == [SandboxMode.WORKSPACE_WRITE]
        # With an amendment: the rule is appended to the rules before the run.
        runtime = FakeRuntime(gate=Refuse(REJECTED))
        assert await _go(runtime, request, Approved(False, amendment=("touch",))) is OK
        assert 'prefix_rule(pattern=["touch"], decision="allow")' in (
            store.amendments_path.read_text()
        )

    _run(tmp_path, scenario)


@pytest.mark.parametrize(
    ("exec_frame", "text"),
    [
        (False, "execution error: environment `gone` is unavailable: not configured"),
        (True, 'exec_command failed: CreateProcess { message: "Rejected(\\"environment `gone` '
               'is unavailable: not configured\\")" }'),
    ],
)  # fmt: skip
def test_an_unavailable_environment_answers(tmp_path: Path, exec_frame: bool, text: str) -> None:
    async def scenario(request: RuntimeRequest, _: PolicyStore) -> None:
        try:
            request.spawner("gone")
        except EnvironmentUnavailableError as exc:
            runtime = FakeRuntime(attempts=[exc])
        assert await _go(runtime, request) == Finished(
            text, Termination.ENVIRONMENT_LOST, success=False
        )

    _run(tmp_path, scenario, exec_frame=exec_frame)


def test_an_aborted_attempt_is_the_outcome(tmp_path: Path) -> None:
    async def scenario(request: RuntimeRequest, _: PolicyStore) -> None:
        runtime = FakeRuntime(attempts=[Aborted(7, ("w",))], envelope=_envelope(str(tmp_path)))
        assert await _go(runtime, request) == Aborted(7, ("w",))

    _run(tmp_path, scenario)
