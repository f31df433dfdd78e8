"""Records of remote unified-exec sessions shared between routers, and what is done with them.

A remote session lives on its daemon as a detached process; the shared store keeps its
daemon process id and the seq (and output offset) of the last output returned to the model.
These helpers build that record from a live process, re-attach a process from it
(ExecService.Attach from that seq), ask its daemon for its state, and kill it; the flows
that use them are `SharedSessions` (shared_sessions.py).
Both routers must authenticate to the daemon as the same subject (same token), since a
daemon shows a process only to the caller that started it (spec 06 §9).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from shellgate.common.errors import EnvironmentNotFoundError
from shellgate.common.process.base import ExitStatus
from shellgate.router.runtime.environments.remote.environment import RemoteEnvironment
from shellgate.router.runtime.environments.spawn import EnvironmentUnavailableError
from shellgate.router.runtime.store.shared_state import SessionRecord
from shellgate.router.runtime.threads.unified_process import ProcessMeta, UnifiedProcess

__all__ = [
    "SessionEnvironments",
    "SessionInfo",
    "reattach",
    "record_of",
    "remote_env",
    "session_status",
    "shared_session_info",
    "terminate_records",
]

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SessionInfo:
    """One stored session as ListSessions shows it."""

    session_id: int
    environment_id: str
    call_id: str
    argv: tuple[str, ...]
    tty: bool
    running: bool
    exit_code: int | None
    started_at_ms: int
    last_used_at_ms: int


class SessionEnvironments(Protocol):
    """Environment lookup by id (the EnvironmentRegistry)."""

    def get(self, environment_id: str) -> object:
        """The environment; unknown → EnvironmentNotFoundError."""
        ...

    async def find(self, environment_id: str) -> object:
        """As `get`, but an unknown id first lets discovery look again."""
        ...


def remote_env(
    environments: SessionEnvironments | None, environment_id: str
) -> RemoteEnvironment | None:
    """The remote environment with that id, or None (unknown or local)."""
    if environments is None:
        return None
    try:
        env = environments.get(environment_id)
    except EnvironmentNotFoundError:
        return None
    return env if isinstance(env, RemoteEnvironment) else None


def record_of(proc: UnifiedProcess, instance_id: str) -> SessionRecord:
    """The shareable record of a live remote session, as of its last drained output."""
    meta = proc.meta
    return SessionRecord(
        session_id=meta.process_id,
        environment_id=meta.environment_id,
        backend_process_id=meta.backend_process_id,
        call_id=meta.call_id,
        argv=meta.argv,
        tty=meta.tty,
        sandboxed=meta.sandboxed,
        started_at_ms=meta.started_at_ms,
        last_used_at_ms=proc.last_used_at_ms,
        consumed_seq=proc.drained_seq,
        instance_id=instance_id,
        consumed_offset=proc.drained_offset,
    )


async def reattach(
    record: SessionRecord,
    environments: SessionEnvironments | None,
    clock: Callable[[], float],
) -> UnifiedProcess | None:
    """A UnifiedProcess over Attach from the record's seq; None when the env is unknown.

    An unreachable daemon raises EnvironmentUnavailableError (nothing attached). An
    environment this router has not discovered yet is looked up first (another replica
    may have found the daemon before this one did).
    """
    env = remote_env(environments, record.environment_id)
    if env is None and environments is not None:
        with contextlib.suppress(EnvironmentNotFoundError):
            await environments.find(record.environment_id)
        env = remote_env(environments, record.environment_id)
    if env is None:
        return None
    handle = await env.attach(
        record.backend_process_id, record.consumed_seq, record.consumed_offset
    )
    meta = ProcessMeta(
        process_id=record.session_id,
        environment_id=record.environment_id,
        backend_process_id=record.backend_process_id,
        call_id=record.call_id,
        argv=record.argv,
        tty=record.tty,
        sandboxed=record.sandboxed,
        started_at_ms=record.started_at_ms,
    )
    proc = UnifiedProcess(
        meta, handle, clock, initial_seq=record.consumed_seq,
        initial_offset=record.consumed_offset,
    )  # fmt: skip
    proc.last_used_at_ms = record.last_used_at_ms
    return proc


async def session_status(
    record: SessionRecord, environments: SessionEnvironments | None
) -> tuple[bool, ExitStatus | None]:
    """(running, exit status) of a shared session as its daemon reports it now.

    Asking counts as use on the daemon (it renews the process's owner TTL). A daemon that
    cannot be reached, or an unknown environment, reports it running (its state is
    unknown, and it may well be); a process the daemon forgot reports not running.
    """
    env = remote_env(environments, record.environment_id)
    if env is None:
        return True, None
    try:
        state = await env.process_status(record.backend_process_id)
    except Exception as exc:
        _log.warning("status of shared session %d unavailable: %s", record.session_id, exc)
        return True, None
    if state is None:
        return False, None
    exited, status = state
    return not exited, status


async def shared_session_info(
    record: SessionRecord, environments: SessionEnvironments | None
) -> SessionInfo:
    """A shared session as ListSessions shows it, its state asked of its daemon."""
    running, status = await session_status(record, environments)
    return SessionInfo(
        session_id=record.session_id,
        environment_id=record.environment_id,
        call_id=record.call_id,
        argv=record.argv,
        tty=record.tty,
        running=running,
        exit_code=None if status is None else status.shell_code,
        started_at_ms=record.started_at_ms,
        last_used_at_ms=record.last_used_at_ms,
    )


async def terminate_records(
    records: Sequence[SessionRecord], environments: SessionEnvironments | None
) -> int:
    """Kill the daemon processes of shared sessions (EndThread); returns how many."""
    for record in records:
        env = remote_env(environments, record.environment_id)
        if env is None:
            continue
        # A daemon that is down cannot be told; its owner TTL reaps the process.
        with contextlib.suppress(EnvironmentUnavailableError, Exception):
            await env.terminate_process(record.backend_process_id)
    if records:
        _log.info("terminated %d shared sessions", len(records))
    return len(records)
