"""Classic `shell_command` execution (spec 05 §1): timeout, caps, drain, model text."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from dataclasses import dataclass
from typing import Any

from shellgate.common.output_channel import pause_until
from shellgate.common.process.base import (
    ExitStatus,
    OutputChunk,
    Signal,
    SpawnRequest,
    Stream,
)
from shellgate.common.sandbox import is_sandbox_denied
from shellgate.common.tasks import cancel_and_wait
from shellgate.router.envelope import (
    DEFAULT_SHELL_TIMEOUT_MS,
    ExecutionEnvelope,
    launch_argv,
    launch_env,
)
from shellgate.router.output.decoding import bytes_to_string_smart
from shellgate.router.output.head_tail import CappedStream, aggregate_output
from shellgate.router.output.texts import format_exec_output_freeform, io_error_text
from shellgate.router.output.truncation import (
    TruncationPolicy,
    approx_token_count,
    utf8_len,
)
from shellgate.router.runtime.call.context import RuntimeRequest
from shellgate.router.runtime.call.events import StartedEvent, Termination
from shellgate.router.runtime.call.orchestrator import SandboxDenied
from shellgate.router.runtime.call.state import Aborted, Finished
from shellgate.router.runtime.environments.spawn import SandboxSpec, SpawnFailure
from shellgate.router.runtime.runtimes.command import CommandRuntime
from shellgate.router.runtime.runtimes.unified_exec import environment_lost_note

__all__ = [
    "CLASSIC_DRAIN_MS",
    "MAX_OUTPUT_EVENTS",
    "TIMEOUT_EXIT_CODE",
    "ClassicResult",
    "ClassicText",
    "ShellRuntime",
    "classic_text",
    "run_classic",
    "spawn_failure_text",
]

# Spec 05 §1.3: readers get 2 s after the exit; §1.2: at most 10 000 deltas per call.
CLASSIC_DRAIN_MS = 2_000
MAX_OUTPUT_EVENTS = 10_000
TIMEOUT_EXIT_CODE = 124

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClassicResult:
    """What one classic run produced."""

    exit_status: ExitStatus
    timed_out: bool
    interrupted: bool
    stdout: bytes
    stderr: bytes
    duration_ms: float
    sandboxed: bool
    environment_id: str

    @property
    def exit_code(self) -> int:
        """124 on timeout, else the status (-1 when unknown, 128+n for a signal)."""
        if self.timed_out:
            return TIMEOUT_EXIT_CODE
        return self.exit_status.shell_code

    @property
    def signal(self) -> int | None:
        """The killing signal when the process died of one (not our timeout kill)."""
        return None if self.timed_out else self.exit_status.signal

    @property
    def lost(self) -> str | None:
        """Why the environment was lost mid-run, if it was."""
        return self.exit_status.environment_lost

    @property
    def aggregated(self) -> bytes:
        """stdout then stderr within 1 MiB (spec 05 §1.2)."""
        return aggregate_output(self.stdout, self.stderr)

    def sandbox_denied(self) -> bool:
        """The spec 05 §1.3 heuristic (only when a sandbox was applied)."""
        texts = {
            "stdout": bytes_to_string_smart(self.stdout),
            "stderr": bytes_to_string_smart(self.stderr),
            "aggregate": bytes_to_string_smart(self.aggregated),
        }
        return is_sandbox_denied(self.exit_code, self.signal, texts, self.sandboxed)

    @property
    def success(self) -> bool:
        """Exit code 0 and nothing abnormal."""
        return self.exit_code == 0 and self.lost is None and not self.interrupted


@dataclass(frozen=True)
class ClassicText:
    """The model text of a classic run plus what the completed event reports."""

    text: str
    original_token_count: int | None
    truncated: bool


def spawn_failure_text(exc: SpawnFailure) -> str:
    """`execution error: Io(Os { … })`, or the plain debug text when there is no errno."""
    if exc.errno:
        return io_error_text(exc.errno, os.strerror(exc.errno))
    return f"execution error: {exc.message}"


def classic_text(result: ClassicResult, policy: TruncationPolicy) -> ClassicText:
    """The freeform block (§1.4), the signal text, or the lost-environment layout (06 §5)."""
    signal = result.signal
    if signal is not None and result.lost is None:
        return ClassicText(f"execution error: Sandbox(Signal({signal}))", None, False)
    aggregated = bytes_to_string_smart(result.aggregated)
    if result.lost is not None:
        aggregated += environment_lost_note(result.environment_id, result.lost)
    content = aggregated
    if result.timed_out:
        content = f"command timed out after {round(result.duration_ms)} milliseconds\n" + content
    text = format_exec_output_freeform(
        result.exit_code, result.duration_ms, aggregated, result.timed_out, policy
    )
    return ClassicText(text, approx_token_count(content), utf8_len(content) > policy.byte_budget)


async def run_classic(
    request: RuntimeRequest, envelope: ExecutionEnvelope, sandbox: SandboxSpec
) -> ClassicResult:
    """Run one classic command to the end; raises SpawnFailure when nothing started.

    Cancellation (the caller's task) and `interrupt` both kill the process group.
    """
    spawner = request.spawner(envelope.environment_id)
    call_id, listener, interrupt = request.call_id, request.listener(), request.interrupt
    start = time.monotonic()
    spawn_request = SpawnRequest(
        argv=tuple(launch_argv(envelope.argv, envelope.shell_type)),
        cwd=envelope.cwd,
        env=launch_env(envelope.env_map, call_id=call_id),
        tty=False,
        stdin_open=False,
        cwd_identity=request.approved_cwd,
    )
    spawned = await spawner.spawn(
        spawn_request, sandbox, detach=False, owner=request.ctx.owner,
        env_policy=request.env_policy(envelope),
    )  # fmt: skip
    handle = spawned.handle
    request.emit(StartedEvent(
        request.element_index, spawner.environment_id, spawned.process_id, handle.pid, None,
        spawned.sandboxed,
    ))  # fmt: skip
    stdout, stderr = CappedStream(), CappedStream()
    seq = 0
    room = request.output_room

    async def pump() -> None:
        nonlocal seq
        async for chunk in handle.output():
            (stderr if chunk.stream is Stream.STDERR else stdout).push(chunk.data)
            seq += 1
            if listener is not None and seq <= MAX_OUTPUT_EVENTS:
                listener(OutputChunk(chunk.stream, chunk.data), seq)
                # Follow the client while the process runs: the pipe fills and the child
                # waits instead of its output being dropped from the stream. From the exit
                # on the drain runs at full speed (its 2 s bound must not depend on the
                # client), so a pause also ends at the exit.
                if room is not None and not wait_task.done() and (pause := room()) is not None:
                    await pause_until(pause, wait_task)

    # Owned by this run: cancelled and awaited in the finally below, before the group is
    # killed (so no output is streamed after the result was taken).
    pump_task = asyncio.create_task(pump(), name=f"classic-pump-{call_id}")
    wait_task = asyncio.create_task(handle.wait(), name=f"classic-wait-{call_id}")
    stop_task = (
        asyncio.create_task(interrupt.wait(), name=f"classic-interrupt-{call_id}")
        if interrupt is not None
        else None
    )
    timed_out = interrupted = False
    try:
        timeout_ms = envelope.timeout_ms or DEFAULT_SHELL_TIMEOUT_MS
        waiters: set[asyncio.Task[Any]] = {wait_task}
        if stop_task is not None:
            waiters.add(stop_task)
        await asyncio.wait(waiters, timeout=timeout_ms / 1000, return_when=asyncio.FIRST_COMPLETED)
        if not wait_task.done():
            interrupted = stop_task is not None and stop_task.done()
            timed_out = not interrupted
            # SIGKILL the whole group at expiry (or on interrupt); the output so far is kept.
            with contextlib.suppress(Exception):
                await handle.signal(Signal.KILL)
        status = await wait_task
        # Readers get 2 s to drain, so grandchildren holding the pipes cannot hang the call.
        await asyncio.wait([pump_task], timeout=CLASSIC_DRAIN_MS / 1000)
        duration_ms = (time.monotonic() - start) * 1000
        return ClassicResult(
            exit_status=status,
            timed_out=timed_out,
            interrupted=interrupted,
            stdout=stdout.data,
            stderr=stderr.data,
            duration_ms=duration_ms,
            sandboxed=spawned.sandboxed,
            environment_id=spawner.environment_id,
        )
    finally:
        try:
            await cancel_and_wait(pump_task, wait_task, stop_task, log=_log)
        finally:
            # Shielded: a second cancellation must not leave the group alive.
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.shield(handle.terminate())


class ShellRuntime(CommandRuntime):
    """The shell_command runtime (Codex's `ShellRuntime`): one classic run per attempt."""

    async def run(self, sandbox: SandboxSpec) -> Finished | Aborted | SandboxDenied:
        """Run the command; a sandboxed run the sandbox blocked may be retried without it."""
        try:
            result = await run_classic(self.request, self.element.envelope, sandbox)
        except SpawnFailure as exc:
            return Finished(spawn_failure_text(exc), Termination.SPAWN_FAILED, success=False)
        if result.interrupted:
            return Aborted()
        rendered = classic_text(result, self.request.turn.truncation)
        if result.lost is not None:
            termination = Termination.ENVIRONMENT_LOST
        elif result.timed_out:
            termination = Termination.TIMED_OUT
        elif result.signal is not None:
            termination = Termination.SIGNALED
        else:
            termination = Termination.EXITED
        finished = Finished(
            rendered.text, termination, success=result.success, exit_code=result.exit_code,
            original_token_count=rendered.original_token_count, truncated=rendered.truncated,
        )  # fmt: skip
        if result.sandboxed and result.sandbox_denied():
            return SandboxDenied(finished)
        return finished
