"""Plain results of the unary RPCs (tools, environments, sessions, server info)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from shellgate.v1 import exec_pb2, router_pb2

__all__ = [
    "EndThreadResult",
    "EnvironmentInfo",
    "RulesError",
    "ServerInfo",
    "SessionInfo",
    "ToolSpec",
    "environment_from_message",
    "server_info_from_message",
    "session_from_message",
    "tool_from_message",
]


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its name, the byte-exact Responses API `tools` entry, and whether hidden."""

    name: str
    json: str
    # Dispatchable but must not be sent to the model (shell_command beside unified exec).
    hidden: bool

    @property
    def spec(self) -> dict[str, Any]:
        """The tools entry parsed (key order kept)."""
        value: dict[str, Any] = json.loads(self.json)
        return value


@dataclass(frozen=True)
class EnvironmentInfo:
    """A configured environment and its reachability."""

    environment_id: str
    remote: bool
    target: str
    reachable: bool
    last_error: str
    # The daemon's (or embedded backend's) GetInfo, when known.
    info: exec_pb2.GetInfoResponse | None


@dataclass(frozen=True)
class SessionInfo:
    """One unified-exec session of a thread."""

    session_id: int
    environment_id: str
    call_id: str
    argv: tuple[str, ...]
    tty: bool
    running: bool
    exit_code: int | None
    started_at_ms: int
    last_used_at_ms: int


@dataclass(frozen=True)
class RulesError:
    """The last failed rules reload."""

    message: str
    rendered: str
    at_ms: int


@dataclass(frozen=True)
class ServerInfo:
    """What GetServerInfo reports."""

    version: str
    instance_id: str
    environments: tuple[EnvironmentInfo, ...]
    rules_files: tuple[str, ...]
    last_rules_error: RulesError | None


@dataclass(frozen=True)
class EndThreadResult:
    """What EndThread cleaned up."""

    terminated_sessions: int
    dropped_pending_approvals: int


def tool_from_message(msg: router_pb2.ToolSpec) -> ToolSpec:
    """A ToolSpec from its wire message."""
    return ToolSpec(msg.name, msg.json, msg.hidden)


def environment_from_message(msg: router_pb2.EnvironmentStatus) -> EnvironmentInfo:
    """An EnvironmentInfo from its wire message."""
    return EnvironmentInfo(
        environment_id=msg.environment_id,
        remote=msg.remote,
        target=msg.target,
        reachable=msg.reachable,
        last_error=msg.last_error,
        info=msg.info if msg.HasField("info") else None,
    )


def session_from_message(msg: router_pb2.SessionInfo) -> SessionInfo:
    """A SessionInfo from its wire message."""
    return SessionInfo(
        session_id=msg.session_id,
        environment_id=msg.environment_id,
        call_id=msg.call_id,
        argv=tuple(msg.argv),
        tty=msg.tty,
        running=msg.running,
        exit_code=msg.exit_code if msg.HasField("exit_code") else None,
        started_at_ms=msg.started_at_ms,
        last_used_at_ms=msg.last_used_at_ms,
    )


def server_info_from_message(msg: router_pb2.GetServerInfoResponse) -> ServerInfo:
    """A ServerInfo from its wire message."""
    error = None
    if msg.HasField("last_rules_error"):
        e = msg.last_rules_error
        error = RulesError(e.message, e.rendered, e.at_ms)
    return ServerInfo(
        version=msg.version,
        instance_id=msg.instance_id,
        environments=tuple(environment_from_message(env) for env in msg.environments),
        rules_files=tuple(msg.rules_files),
        last_rules_error=error,
    )
