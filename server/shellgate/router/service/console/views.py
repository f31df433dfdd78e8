"""What the console pages show, read from the router app: bounded, display-ready rows.

Nothing here changes router state. Every text is clipped (`clip`) before it reaches a
template, and the templates escape it (Jinja autoescape).
"""

from __future__ import annotations

import json
import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shellgate.router.runtime.approvals.desk import PendingView
from shellgate.router.runtime.approvals.view import command_text
from shellgate.router.runtime.approvals.view_text import visible
from shellgate.router.runtime.audit import environment_host
from shellgate.router.runtime.environments.registry import LocalEnvironment
from shellgate.router.runtime.environments.remote.environment import RemoteEnvironment
from shellgate.router.runtime.threads.registry import ThreadState, owned_thread_key
from shellgate.router.runtime.threads.unified_process import UnifiedProcess
from shellgate.router.service.console.judging import plain_reason, risk_markers

if TYPE_CHECKING:
    from shellgate.router.service.app import RouterApp

__all__ = [
    "AuditRow",
    "EnvironmentRow",
    "PendingRow",
    "SessionRow",
    "ThreadRow",
    "audit_tail",
    "clip",
    "environment_rows",
    "find_session",
    "pending_rows",
    "thread_rows",
]

MAX_FIELD_CHARS = 400
MAX_COMMAND_CHARS = 2_000
MAX_LIST_ITEMS = 20
# What "show all" shows of a clipped command or segment list (one click away).
MAX_FULL_CHARS = 200_000
MAX_FULL_ITEMS = 2_000
# Rows per table: a console is for a person, not a bulk export.
MAX_ROWS = 200
AUDIT_RECORDS = 50
# Read at most this much of the audit file's end (records are one line each).
AUDIT_TAIL_BYTES = 256 * 1024


def clip(text: object, limit: int = MAX_FIELD_CHARS) -> str:
    """`text` as a string of at most `limit` characters (an ellipsis marks a cut), its
    invisible and bidirectional control characters escaped (`\\u202e`) as in the view."""
    value = visible(str(text))
    return value if len(value) <= limit else value[: limit - 1] + "…"


def _clip_all(items: tuple[str, ...] | list[Any], what: str = "more") -> tuple[str, ...]:
    shown = tuple(marked(str(i), MAX_FIELD_CHARS) for i in list(items)[:MAX_LIST_ITEMS])
    more = len(items) - len(shown)
    return (*shown, f"… [{more} {what}]") if more > 0 else shown


@dataclass(frozen=True)
class EnvironmentRow:
    """One environment and its health."""

    environment_id: str
    kind: str
    status: str
    host: str
    detail: str


def environment_rows(app: RouterApp) -> list[EnvironmentRow]:
    """The registry's environments: embedded or remote, reachable or why not, whose host."""
    rows = []
    for env_id in app.environments.ids()[:MAX_ROWS]:
        env = app.environments.get(env_id)
        if isinstance(env, LocalEnvironment):
            rows.append(
                EnvironmentRow(env_id, "embedded", "ok", clip(environment_host(env)), clip(env.cwd))
            )
            continue
        assert isinstance(env, RemoteEnvironment)
        info = env.info
        host = env.config.target
        if info is not None:
            host = (
                f"{info.hostname} ({info.os}/{info.arch}, user {info.user}) via {env.config.target}"
            )
        if env.breaker.open:
            status = "circuit open"
        elif not env.reachable:
            status = "unreachable"
        else:
            status = "ok" if info is not None else "not probed yet"
        rows.append(
            EnvironmentRow(env_id, "remote", status, clip(host), clip(env.last_error or ""))
        )
    return rows


@dataclass(frozen=True)
class SessionRow:
    """One unified-exec session held by this replica."""

    thread_key: str
    thread_id: str
    subject: str
    session_id: int
    environment_id: str
    command: str
    running: bool
    exit_code: int | None


@dataclass(frozen=True)
class ThreadRow:
    """One live thread of this replica."""

    thread_key: str
    thread_id: str
    subject: str
    calls_running: int
    approvals_parked: int
    sessions: tuple[SessionRow, ...]

    @property
    def finished(self) -> bool:
        """No call running, no approval waiting and no live session: folded away."""
        return not (
            self.calls_running or self.approvals_parked or any(s.running for s in self.sessions)
        )


def _subject_of(key: str, subjects: dict[str, str]) -> tuple[str, str]:
    """(caller subject, thread id as the caller named it) of an owned registry key."""
    prefix, dot, thread_id = key.partition(".")
    if not dot:
        return "", key
    return subjects.get(prefix, "?"), thread_id


def subject_prefixes(app: RouterApp) -> dict[str, str]:
    """The owned-key prefix of every subject the token file names (and the local one)."""
    out = {}
    for subject in (*app.auth.subjects, "local"):
        out[owned_thread_key(subject, "x").partition(".")[0]] = subject
    return out


def _session_rows(state: ThreadState, subject: str, thread_id: str) -> tuple[SessionRow, ...]:
    return tuple(
        SessionRow(
            state.thread_id,
            clip(thread_id),
            clip(subject),
            info.session_id,
            info.environment_id,
            clip(shlex.join(info.argv), MAX_COMMAND_CHARS),
            info.running,
            info.exit_code,
        )
        for info in state.sessions.sessions()[:MAX_ROWS]
    )


def thread_rows(app: RouterApp) -> list[ThreadRow]:
    """This replica's threads with their sessions (other replicas' are not listed)."""
    subjects = subject_prefixes(app)
    rows = []
    for state in app.threads.states()[:MAX_ROWS]:
        subject, thread_id = _subject_of(state.thread_id, subjects)
        rows.append(
            ThreadRow(
                state.thread_id,
                clip(thread_id),
                clip(subject),
                len(state.inflight),
                len(state.parked),
                _session_rows(state, subject, thread_id),
            )
        )
    return rows


def find_session(app: RouterApp, thread_key: str, session_id: int) -> UnifiedProcess | None:
    """A session this replica holds, by its thread's registry key and its id."""
    for state in app.threads.states():
        if state.thread_id == thread_key:
            return state.sessions.get(session_id)
    return None


@dataclass(frozen=True)
class PendingRow:
    """One pending approval, display-ready: a clip is marked (`… [N more characters]`) and
    what it cut is one click away (`command_full`, `segments_all`: empty when nothing was cut)."""

    view: PendingView
    command: str
    summary: str
    reason: str
    cwd: str
    segments: tuple[str, ...]
    matched_rules: tuple[str, ...]
    amendment: str
    seconds_left: int
    command_full: str = ""
    segments_all: tuple[str, ...] = ()
    hidden_characters: tuple[str, ...] = ()
    patch_files: tuple[str, ...] = ()
    patch_diff: str = ""
    why: str = ""  # the plain-language reason (judging.plain_reason)
    risks: tuple[str, ...] = ()  # risk markers (judging.risk_markers)
    env_overrides: tuple[str, ...] = ()  # `NAME=value` / `unset NAME` (what runs depends on them)


def marked(text: str, limit: int) -> str:
    """`text` cut at `limit` characters, the cut saying how much it hid."""
    text = visible(text)
    return text if len(text) <= limit else f"{text[:limit]}… [{len(text) - limit} more characters]"


def _pending_row(v: PendingView, now: int) -> PendingRow:
    long_segments = len(v.segments) > MAX_LIST_ITEMS or any(
        len(s) > MAX_FIELD_CHARS for s in v.segments
    )
    return PendingRow(
        v,
        marked(v.command, MAX_COMMAND_CHARS),
        marked(v.summary, MAX_FIELD_CHARS),
        marked(v.reason, MAX_FIELD_CHARS),
        marked(v.cwd, MAX_FIELD_CHARS),
        _clip_all(v.segments, "more segments"),
        _clip_all(v.matched_rules, "more rules"),
        clip(shlex.join(v.proposed_amendment)) if v.proposed_amendment else "",
        max(0, (v.deadline_ms - now) // 1000),
        marked(v.command, MAX_FULL_CHARS) if len(v.command) > MAX_COMMAND_CHARS else "",
        tuple(marked(s, MAX_FULL_CHARS) for s in v.segments[:MAX_FULL_ITEMS])
        if long_segments
        else (),
        tuple(clip(h) for h in v.hidden_characters[:MAX_LIST_ITEMS]),
        tuple(marked(f, MAX_FIELD_CHARS) for f in v.patch_files[:MAX_ROWS]),
        marked(v.patch_diff, MAX_FULL_CHARS),
        plain_reason(v),
        risk_markers(v),
        tuple(marked(e, MAX_FULL_CHARS) for e in v.env_overrides[:MAX_LIST_ITEMS]),
    )


def pending_rows(views: list[PendingView], now_ms: int | None = None) -> list[PendingRow]:
    """The desk's pending approvals, oldest first, clips marked."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    return [_pending_row(v, now) for v in views[:MAX_ROWS]]


@dataclass(frozen=True)
class AuditRow:
    """One audit record, as a line a person reads."""

    seq: str
    time: str
    kind: str
    subject: str
    thread: str
    what: str
    decided_by: str
    command: str


_LOG_RECORDS = {"start": "log started", "rotate": "log rotated", "checkpoint": "checkpoint"}


def _log_record_what(record: dict[str, Any]) -> str:
    """What a start / rotate / checkpoint record says, in words."""
    kind, chain = record.get("type"), str(record.get("chain") or "")[:12]
    if kind == "start":
        where = f" on {record['host']}" if record.get("host") else ""
        return f"router started (pid {record.get('pid', '?')}{where}), chain {chain}"
    if kind == "rotate":
        return f"a new file continues chain {chain}"
    return f"vouches for records up to #{record.get('seq', '?')}, chain {chain}"


def _audit_command(record: dict[str, Any]) -> str:
    """The command a record names: its text when the record has it (argv or the view's
    display text), else the tool and the command digest."""
    command = record.get("command")
    if isinstance(command, list) and command:
        return command_text(tuple(str(c) for c in command))
    if isinstance(command, str) and command:
        return command
    digest = str(record.get("command_digest") or "")
    return " ".join(x for x in (str(record.get("tool") or ""), digest[:16]) if x)


def _audit_row(record: dict[str, Any]) -> AuditRow:
    approval = record.get("approval") if isinstance(record.get("approval"), dict) else {}
    assert isinstance(approval, dict)
    kind = str(record.get("type", ""))
    if kind in _LOG_RECORDS:
        what, label, shown = _log_record_what(record), _LOG_RECORDS[kind], ""
    else:
        label, shown = kind, _audit_command(record)
        if kind == "outcome":
            what = f"{record.get('termination', '')} exit={record.get('exit_code')}"
        elif kind == "approval_pending":
            what = f"waits for an operator ({record.get('kind', '')})"
        else:
            source = approval.get("source", "")
            what = (
                f"{record.get('decision', '')} ({source})"
                if source
                else str(record.get("decision", ""))
            )
    return AuditRow(
        clip(record.get("seq", "")),
        clip(record.get("time", "")),
        clip(label),
        clip(record.get("subject", "")),
        clip(record.get("thread", "")),
        clip(what),
        clip(approval.get("who", "")),
        clip(shown, MAX_COMMAND_CHARS),
    )


def audit_tail(path: str, count: int = AUDIT_RECORDS) -> list[AuditRow]:
    """The newest `count` records of the audit file, newest first ([] when audit is off)."""
    if not path:
        return []
    try:
        with Path(path).open("rb") as file:
            file.seek(0, 2)
            size = file.tell()
            file.seek(max(0, size - AUDIT_TAIL_BYTES))
            data = file.read(AUDIT_TAIL_BYTES)
    except OSError:
        return []
    lines = data.split(b"\n")
    if len(data) == AUDIT_TAIL_BYTES:
        lines = lines[1:]  # the first line may be cut
    rows: list[AuditRow] = []
    for line in reversed(lines):
        if len(rows) >= count:
            break
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            rows.append(_audit_row(record))
    return rows
