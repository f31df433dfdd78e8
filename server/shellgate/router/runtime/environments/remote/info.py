"""What an exec-server daemon says about its host (GetInfo), as domain values.

`info_from_pb` is the one place the router reads a `GetInfoResponse`: the remote client
converts the answer when it connects, and everything after it (the environment registry,
turn building, `ListEnvironments`) sees these frozen records only.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from shellgate.common.enum_maps import SHELL_TYPES
from shellgate.router.handler.shells import ShellType
from shellgate.v1 import exec_pb2

__all__ = [
    "DaemonCapabilities",
    "DaemonLimits",
    "DaemonShell",
    "EnvironmentInfo",
    "ExecBackend",
    "info_from_pb",
]


class ExecBackend(enum.StrEnum):
    """How the daemon spawns processes."""

    LOCAL = "local"
    SSH = "ssh"


@dataclass(frozen=True)
class DaemonShell:
    """The host's native shell: its kind (None when not reported or not known) and path."""

    type: ShellType | None
    path: str


@dataclass(frozen=True)
class DaemonCapabilities:
    """What the daemon can do on its host."""

    pty: bool
    signals: bool
    sandbox: bool
    # Why `sandbox` is false; empty when it is true.
    sandbox_unavailable_reason: str


@dataclass(frozen=True)
class DaemonLimits:
    """The bounds the daemon enforces, in the units their names carry."""

    retained_output_bytes: int
    exited_retention_ms: int
    default_owner_ttl_ms: int
    request_id_ttl_ms: int
    max_processes: int
    max_file_bytes: int
    max_chunk_bytes: int
    max_message_bytes: int
    max_wait_ms: int


@dataclass(frozen=True)
class EnvironmentInfo:
    """A daemon's GetInfo answer; a part it did not send is None."""

    shell: DaemonShell | None
    cwd: str
    os: str
    arch: str
    hostname: str
    user: str
    home: str
    backend: ExecBackend | None
    capabilities: DaemonCapabilities | None
    version: str
    limits: DaemonLimits | None
    caller: str


_BACKENDS = {
    exec_pb2.EXEC_BACKEND_LOCAL: ExecBackend.LOCAL,
    exec_pb2.EXEC_BACKEND_SSH: ExecBackend.SSH,
}


def _shell(pb: exec_pb2.GetInfoResponse) -> DaemonShell | None:
    if not pb.HasField("shell"):
        return None
    name = SHELL_TYPES.domain(pb.shell.type)
    return DaemonShell(None if name is None else ShellType(name), pb.shell.path)


def info_from_pb(pb: exec_pb2.GetInfoResponse) -> EnvironmentInfo:
    """The domain record of a GetInfo answer (unknown enum numbers read as not reported)."""
    caps, bounds = pb.capabilities, pb.limits
    limits = DaemonLimits(
        bounds.retained_output_bytes, bounds.exited_retention_ms, bounds.default_owner_ttl_ms,
        bounds.request_id_ttl_ms, bounds.max_processes, bounds.max_file_bytes,
        bounds.max_chunk_bytes, bounds.max_message_bytes, bounds.max_wait_ms,
    )  # fmt: skip
    return EnvironmentInfo(
        shell=_shell(pb),
        cwd=pb.cwd,
        os=pb.os,
        arch=pb.arch,
        hostname=pb.hostname,
        user=pb.user,
        home=pb.home,
        backend=_BACKENDS.get(pb.backend),
        capabilities=(
            DaemonCapabilities(
                caps.pty, caps.signals, caps.sandbox, caps.sandbox_unavailable_reason
            )
            if pb.HasField("capabilities")
            else None
        ),
        version=pb.version,
        limits=limits if pb.HasField("limits") else None,
        caller=pb.caller,
    )
