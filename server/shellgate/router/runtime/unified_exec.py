"""exec_command / write_stdin lifecycles (spec 05 §3.3) over a thread's SessionManager."""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from shellgate.common.env_policy import ShellEnvironmentPolicy
from shellgate.common.process.base import Signal, SpawnRequest
from shellgate.router.decode.rust_text import debug_str
from shellgate.router.envelope import ExecutionEnvelope, launch_argv, launch_env
from shellgate.router.output.texts import (
    UnifiedExecErrorText,
    exec_command_failed,
    render_unified_response,
    unified_output_body,
    unified_overflow_body,
    write_stdin_failed,
)
from shellgate.router.output.truncation import (
    TruncationPolicy,
    approx_tokens_from_byte_count,
    decode_utf8_lossy,
    utf8_len,
)
from shellgate.router.output.unified_rules import (
    EARLY_EXIT_CHECK_MS,
    POST_EXIT_STREAM_CLOSE_WAIT_MS,
    POST_WRITE_REACTION_MS,
)
from shellgate.router.runtime.events import Termination
from shellgate.router.runtime.sessions import SessionManager
from shellgate.router.runtime.spawn import (
    EnvironmentUnavailableError,
    SandboxSpec,
    Spawner,
    SpawnFailure,
)
from shellgate.router.runtime.unified_process import OutputListener, ProcessMeta, UnifiedProcess

__all__ = [
    "CTRL_C",
    "UnifiedResponse",
    "collect",
    "environment_lost_note",
    "exec_command_start",
    "write_stdin",
]

CTRL_C = "\u0003"


def rejected_text(message: str) -> str:
    """`exec_command failed: CreateProcess { message: "Rejected(\\"…\\")" }`."""
    inner = f"Rejected({debug_str(message)})"
    return exec_command_failed(f"CreateProcess {{ message: {debug_str(inner)} }}")


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


def _respond(
    proc: UnifiedProcess,
    manager: SessionManager,
    policy: TruncationPolicy,
    wall_ms: float,
    rng: random.Random,
) -> UnifiedResponse:
    snap = proc.drain()
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
    *,
    manager: SessionManager,
    spawner: Spawner,
    envelope: ExecutionEnvelope,
    call_id: str,
    sandbox: SandboxSpec,
    owner: str,
    listener: OutputListener | None = None,
    on_started: Callable[[UnifiedProcess], None] | None = None,
    interrupt: asyncio.Event | None = None,
    rng: random.Random | None = None,
    env_policy: ShellEnvironmentPolicy | None = None,
) -> UnifiedResponse:
    """Spawn, wait 150 ms for an early exit, store if alive, collect until the yield deadline."""
    rng = rng or random.Random()
    clock = manager.clock
    process_id = await manager.reserve()
    argv = launch_argv(envelope.argv, envelope.shell_type)
    env = launch_env(envelope.env_map, call_id=call_id)
    request = SpawnRequest(
        argv=tuple(argv), cwd=envelope.cwd, env=env, tty=bool(envelope.tty), stdin_open=False
    )
    try:
        spawned = await spawner.spawn(
            request, sandbox, detach=True, owner=owner, env_policy=env_policy
        )
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
    proc.listener = listener
    if on_started is not None:
        on_started(proc)
    warnings: list[str] = []
    try:
        try:
            await proc.wait_exit(EARLY_EXIT_CHECK_MS / 1000)
        except asyncio.CancelledError:
            # The call is going away, but a unified process outlives it (spec 06 §4).
            if not proc.exited:
                manager.store(proc)
            raise
        if not proc.exited:
            # Stored before yielding, so an interrupt or a cancelled stream does not kill it.
            warnings = manager.store(proc)
        start = clock()
        deadline = start + (envelope.yield_time_ms or 0) / 1000
        completed = await collect(proc, deadline, interrupt)
        wall_ms = (clock() - start) * 1000
        policy = envelope.output_policy or TruncationPolicy.tokens(10_000)
        response = _respond(proc, manager, policy, wall_ms, rng)
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
        proc.listener = None


async def write_stdin(
    *,
    manager: SessionManager,
    session_id: int,
    chars: str,
    yield_time_ms: int,
    policy: TruncationPolicy,
    listener: OutputListener | None = None,
    interrupt: asyncio.Event | None = None,
    rng: random.Random | None = None,
) -> UnifiedResponse:
    """Write (or SIGINT for "\\u0003" on pipes), wait 100 ms, collect until the deadline."""
    rng = rng or random.Random()
    clock = manager.clock
    start = clock()
    try:
        proc = await manager.open(session_id)
    except EnvironmentUnavailableError as exc:
        text = write_stdin_failed(UnifiedExecErrorText.process_failed(str(exc)))
        return UnifiedResponse(text, error=True)
    if proc is None:
        lost_env = manager.lost_environment(session_id)
        if lost_env is not None:
            text = write_stdin_failed(
                UnifiedExecErrorText.process_failed(f"environment `{lost_env}` was lost")
            )
        else:
            text = write_stdin_failed(UnifiedExecErrorText.unknown_process_id(session_id))
        return UnifiedResponse(text, error=True)
    proc.listener = listener
    reported = False
    try:
        if chars and not proc.meta.tty and chars != CTRL_C:
            text = write_stdin_failed(UnifiedExecErrorText.STDIN_CLOSED)
            return UnifiedResponse(text, error=True)
        proc.touch()
        deadline = start + yield_time_ms / 1000
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
        response = _respond(proc, manager, policy, wall_ms, rng)
        response.interrupted = not completed
        if proc.exited and completed:
            reported = True
            await manager.finish(proc)
        return response
    finally:
        proc.listener = None
        if not reported:
            # A re-attached shared session records what was consumed and lets go.
            await manager.settle(proc)


async def _sleep_unless(seconds: float, interrupt: asyncio.Event | None) -> None:
    if interrupt is None:
        await asyncio.sleep(seconds)
        return
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(interrupt.wait(), seconds)
