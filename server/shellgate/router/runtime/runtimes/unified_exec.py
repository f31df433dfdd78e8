"""exec_command / write_stdin lifecycles (spec 05 §3.3) over a thread's SessionManager."""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from dataclasses import dataclass, field

from shellgate.common.process.base import Signal, SpawnRequest
from shellgate.router.envelope import ExecutionEnvelope, launch_argv, launch_env
from shellgate.router.output.decoding import decode_utf8_lossy
from shellgate.router.output.texts import (
    UnifiedExecErrorText,
    render_unified_response,
    unified_output_body,
    unified_overflow_body,
    write_stdin_failed,
)
from shellgate.router.output.truncation import (
    TruncationPolicy,
    approx_tokens_from_byte_count,
    utf8_len,
)
from shellgate.router.output.unified_rules import (
    EARLY_EXIT_CHECK_MS,
    MAX_YIELD_TIME_MS,
    POST_EXIT_STREAM_CLOSE_WAIT_MS,
    POST_WRITE_REACTION_MS,
)
from shellgate.router.projection import WriteStdinCall
from shellgate.router.runtime.call.context import RuntimeRequest, rejected_text
from shellgate.router.runtime.call.events import StartedEvent, TerminalInteractionEvent, Termination
from shellgate.router.runtime.call.state import Aborted, Finished
from shellgate.router.runtime.environments.spawn import (
    EnvironmentUnavailableError,
    SandboxSpec,
    SpawnFailure,
)
from shellgate.router.runtime.runtimes.command import CommandRuntime
from shellgate.router.runtime.threads.session_lease import SessionBusyError
from shellgate.router.runtime.threads.sessions import SessionManager
from shellgate.router.runtime.threads.unified_process import ProcessMeta, UnifiedProcess

__all__ = [
    "CTRL_C",
    "UnifiedExecRuntime",
    "UnifiedResponse",
    "collect",
    "environment_lost_note",
    "exec_command_start",
    "run_write_stdin",
    "write_stdin",
]

CTRL_C = "\u0003"


def environment_lost_note(environment_id: str, reason: str) -> str:
    """The line appended to the output of a command whose environment was lost."""
    return f"\n[environment `{environment_id}` was lost: {reason}]"


@dataclass
class UnifiedResponse:
    """One exec_command / write_stdin answer: the model text plus structured fields."""

    text: str
    exit_code: int | None = None
    session_id: int | None = None
    wall_time_ms: float = 0.0
    original_token_count: int | None = None
    truncated: bool = False
    warnings: list[str] = field(default_factory=list)
    lost: str | None = None
    interrupted: bool = False
    # Model-facing error (nothing ran or the session is unknown).
    error: bool = False
    spawn_failed: bool = False
    signal: int | None = None

    @property
    def termination(self) -> Termination:
        """How a finished answer left the process: lost, still running, signalled or exited."""
        if self.lost is not None:
            return Termination.ENVIRONMENT_LOST
        if self.exit_code is None:
            return Termination.YIELDED
        if self.signal is not None:
            return Termination.SIGNALED
        return Termination.EXITED


def _chunk_id(rng: random.Random) -> str:
    return f"{rng.randrange(16**6):06x}"


async def collect(proc: UnifiedProcess, deadline: float, interrupt: asyncio.Event | None) -> bool:
    """Wait until the deadline, or until exited and closed (50 ms grace); False if interrupted."""
    clock = proc.clock
    exit_seen: float | None = None
    while True:
        proc.changed.clear()
        if interrupt is not None and interrupt.is_set():
            return False
        now = clock()
        if proc.exited:
            if proc.closed:
                return True
            if exit_seen is None:
                exit_seen = now
            # Background grandchildren may hold the pipe open: never wait long for EOF.
            limit = min(deadline, exit_seen + POST_EXIT_STREAM_CLOSE_WAIT_MS / 1000)
        else:
            limit = deadline
        remaining = limit - now
        if remaining <= 0:
            return True
        # Owned by this loop iteration: cancelled and awaited in the finally below.
        waiters = [asyncio.ensure_future(proc.changed.wait())]
        if interrupt is not None:
            waiters.append(asyncio.ensure_future(interrupt.wait()))
        try:
            await asyncio.wait(waiters, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()
            for waiter in waiters:
                with contextlib.suppress(asyncio.CancelledError):
                    await waiter


async def _respond(
    proc: UnifiedProcess,
    manager: SessionManager,
    policy: TruncationPolicy,
    wall_ms: float,
    rng: random.Random,
) -> UnifiedResponse:
    snap = await proc.take_output(shared=manager.distributed)
    raw = snap.raw_byte_count
    if snap.omitted_bytes:
        head, tail = decode_utf8_lossy(snap.head), decode_utf8_lossy(snap.tail)
        body = unified_overflow_body(head, tail, snap.omitted_bytes, policy)
        truncated = True
    else:
        text = decode_utf8_lossy(snap.to_bytes())
        body = unified_output_body(text, policy)
        truncated = utf8_len(text) > policy.byte_budget
    status = proc.exit_status
    exit_code: int | None = None
    session_id: int | None = proc.process_id
    lost = proc.lost
    if status is not None:
        exit_code = status.shell_code
        session_id = None
        if lost is not None:
            body += environment_lost_note(proc.meta.environment_id, lost)
    text_out = render_unified_response(
        chunk_id=_chunk_id(rng),
        wall_time_ms=wall_ms,
        exit_code=exit_code,
        session_id=session_id,
        original_token_count=approx_tokens_from_byte_count(raw),
        body=body,
    )
    return UnifiedResponse(
        text=text_out,
        exit_code=exit_code,
        session_id=session_id,
        wall_time_ms=wall_ms,
        original_token_count=approx_tokens_from_byte_count(raw),
        truncated=truncated,
        lost=lost,
        signal=None if status is None else status.signal,
    )


async def exec_command_start(
    request: RuntimeRequest, envelope: ExecutionEnvelope, sandbox: SandboxSpec
) -> UnifiedResponse:
    """Spawn, wait 150 ms for an early exit, store if alive, collect until the yield deadline."""
    spawner = request.spawner(envelope.environment_id)
    manager, call_id, rng = request.ctx.thread.sessions, request.call_id, request.ctx.rng
    clock = manager.clock
    process_id = await manager.reserve()
    argv = launch_argv(envelope.argv, envelope.shell_type)
    env = launch_env(envelope.env_map, call_id=call_id)
    spawn_request = SpawnRequest(
        argv=tuple(argv), cwd=envelope.cwd, env=env, tty=bool(envelope.tty), stdin_open=False,
        cwd_identity=request.approved_cwd,
    )  # fmt: skip
    try:
        spawned = await spawner.spawn(
            spawn_request, sandbox, detach=True, owner=request.ctx.owner,
            env_policy=request.env_policy(envelope),
        )  # fmt: skip
    except SpawnFailure as exc:
        await manager.release(process_id)
        message = UnifiedExecErrorText.create_process(
            f"{exc.message} (os error {exc.errno})" if exc.errno else exc.message
        )
        return UnifiedResponse(rejected_text(message), error=True, spawn_failed=True)
    except BaseException:
        manager.release_id(process_id)
        if manager.distributed:
            with contextlib.suppress(Exception):
                await manager.release(process_id)
        raise
    meta = ProcessMeta(
        process_id=process_id,
        environment_id=spawner.environment_id,
        backend_process_id=spawned.process_id,
        call_id=call_id,
        argv=tuple(envelope.argv),
        tty=bool(envelope.tty),
        sandboxed=spawned.sandboxed,
        started_at_ms=int(time.time() * 1000),
    )
    proc = UnifiedProcess(meta, spawned.handle, clock)
    proc.listener, proc.room = request.listener(), request.output_room
    request.emit(StartedEvent(
        request.element_index, meta.environment_id, meta.backend_process_id, proc.handle.pid,
        proc.process_id, meta.sandboxed,
    ))  # fmt: skip
    warnings: list[str] = []
    try:
        try:
            # Shared before the first yield ends: a router dying mid-yield orphans nothing.
            await manager.publish_started(proc)
            await proc.wait_exit(EARLY_EXIT_CHECK_MS / 1000)
            # EndThread while this process was starting: it goes with the thread.
            await manager.end_if_closed(proc)
        except asyncio.CancelledError:
            # The call is going away, but a unified process outlives it (spec 06 §4).
            if not proc.exited:
                manager.store(proc)
                manager.hand_over(proc)
            raise
        if not proc.exited:
            # Stored before yielding, so an interrupt or a cancelled stream does not kill it.
            warnings = manager.store(proc)
        start = clock()
        deadline = start + (envelope.yield_time_ms or 0) / 1000
        completed = await collect(proc, deadline, request.interrupt)
        wall_ms = (clock() - start) * 1000
        policy = envelope.output_policy or TruncationPolicy.tokens(10_000)
        response = await _respond(proc, manager, policy, wall_ms, rng)
        response.warnings = warnings
        response.interrupted = not completed
        if proc.exited and completed:
            await manager.finish(proc)
        elif proc.exited and manager.get(process_id) is None:
            # Interrupted right after an early exit: never stored, so nobody else will reap it.
            await manager.finish(proc)
        else:
            # Distributed thread state: a live remote session is handed to the shared store.
            await manager.settle(proc)
        return response
    finally:
        proc.listener = proc.room = None


async def write_stdin(request: RuntimeRequest, call: WriteStdinCall) -> UnifiedResponse:
    """Write (or SIGINT for "\\u0003" on pipes), wait 100 ms, collect until the deadline."""
    manager, rng, interrupt = request.ctx.thread.sessions, request.ctx.rng, request.interrupt
    session_id, chars = call.params.session_id, call.params.chars
    yield_time_ms, policy = call.yield_time_ms, call.output_policy
    clock = manager.clock
    start = clock()
    try:
        # A concurrent poll of a shared session (any router) is waited for, as one router's
        # second poll waits behind the same buffer: up to this poll's yield plus the longest
        # yield the other may still run.
        proc = await manager.open(session_id, (yield_time_ms + MAX_YIELD_TIME_MS) / 1000)
    except (EnvironmentUnavailableError, SessionBusyError) as exc:
        text = write_stdin_failed(UnifiedExecErrorText.process_failed(str(exc)))
        return UnifiedResponse(text, error=True)
    # Waiting for the lease may have used up the yield: give the replay a moment.
    deadline = max(start + yield_time_ms / 1000, clock() + POST_WRITE_REACTION_MS / 1000)
    if proc is None:
        lost_env = manager.lost_environment(session_id)
        if lost_env is not None:
            text = write_stdin_failed(
                UnifiedExecErrorText.process_failed(f"environment `{lost_env}` was lost")
            )
        else:
            text = write_stdin_failed(UnifiedExecErrorText.unknown_process_id(session_id))
        return UnifiedResponse(text, error=True)
    proc.listener, proc.room = request.listener(), request.output_room
    reported = False
    try:
        if chars and not proc.meta.tty and chars != CTRL_C:
            text = write_stdin_failed(UnifiedExecErrorText.STDIN_CLOSED)
            return UnifiedResponse(text, error=True)
        proc.touch()
        if chars:
            wrote = True
            try:
                if proc.meta.tty:
                    await proc.handle.write(chars.encode("utf-8", "surrogatepass"))
                elif not proc.exited:
                    await proc.handle.signal(Signal.INTERRUPT)
            except Exception:
                wrote = False
                await proc.wait_exit(POST_EXIT_STREAM_CLOSE_WAIT_MS / 1000)
                if not proc.exited:
                    return UnifiedResponse(
                        write_stdin_failed(UnifiedExecErrorText.WRITE_TO_STDIN), error=True
                    )
            if wrote:
                # Give the process a moment to react before collecting.
                await _sleep_unless(POST_WRITE_REACTION_MS / 1000, interrupt)
        completed = await collect(proc, deadline, interrupt)
        # The write_stdin wait counts from the call's start (a write answers after ~250 ms).
        wall_ms = (clock() - start) * 1000
        response = await _respond(proc, manager, policy, wall_ms, rng)
        response.interrupted = not completed
        if proc.exited and completed:
            reported = True
            await manager.finish(proc)
        return response
    finally:
        proc.listener = proc.room = None
        if not reported:
            # A re-attached shared session records what was consumed and lets go.
            await manager.settle(proc)


async def _sleep_unless(seconds: float, interrupt: asyncio.Event | None) -> None:
    if interrupt is None:
        await asyncio.sleep(seconds)
        return
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(interrupt.wait(), seconds)


class UnifiedExecRuntime(CommandRuntime):
    """The exec_command runtime (Codex's `UnifiedExecRuntime`): start, or store, a session."""

    async def run(self, sandbox: SandboxSpec) -> Finished | Aborted:
        """Start the process and answer at the yield deadline; never offers a sandbox retry."""
        resp = await exec_command_start(self.request, self.element.envelope, sandbox)
        if resp.spawn_failed:
            return Finished(resp.text, Termination.SPAWN_FAILED, success=False)
        if resp.interrupted:
            return Aborted(resp.session_id, tuple(resp.warnings))
        # Unified responses are successful tool results even for non-zero exits (spec 05 §3.6).
        return Finished(
            resp.text, resp.termination, success=True, exit_code=resp.exit_code,
            session_id=resp.session_id, original_token_count=resp.original_token_count,
            truncated=resp.truncated, warnings=tuple(resp.warnings),
        )  # fmt: skip


async def run_write_stdin(request: RuntimeRequest, call: WriteStdinCall) -> Finished | Aborted:
    """write_stdin to a session of the thread (no approval: the session already runs)."""
    resp = await write_stdin(request, call)
    if resp.error:
        return Finished(resp.text, Termination.TOOL_ERROR, success=False)
    params = call.params
    if params.chars or resp.session_id is not None:
        request.emit(TerminalInteractionEvent(params.session_id, params.chars))
    if resp.interrupted:
        return Aborted(resp.session_id)
    return Finished(
        resp.text, resp.termination, success=True, exit_code=resp.exit_code,
        session_id=resp.session_id, original_token_count=resp.original_token_count,
        truncated=resp.truncated,
    )  # fmt: skip
