"""Domain enums ↔ protobuf enum numbers, both directions from one table each (both daemons).

A table is written once, domain → wire; `EnumMap` derives the inverse, so the exec-server's
servicer and the router's remote client cannot drift apart. Wire zero values
(`*_UNSPECIFIED`) read as the table's `unspecified` default.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from shellgate.common.env_policy import Inherit
from shellgate.common.process.base import Signal, Stream
from shellgate.common.sandbox import SandboxMode
from shellgate.v1 import exec_pb2 as pb
from shellgate.v1 import shell_pb2 as shell_pb

D = TypeVar("D")
W = TypeVar("W")  # a generated enum's ValueType (an int at run time)


class EnumMap(Generic[D, W]):
    """A bijection between domain values and wire enum numbers."""

    __slots__ = ("_to_domain", "to_wire", "unspecified")

    def __init__(self, to_wire: Mapping[D, W], unspecified: D | None = None) -> None:
        self.to_wire: Mapping[D, W] = dict(to_wire)
        self._to_domain: dict[int, D] = {int(number): value for value, number in self.to_wire.items()}  # type: ignore[call-overload]
        self.unspecified = unspecified

    def __getitem__(self, value: D) -> W:
        return self.to_wire[value]

    def domain(self, number: int) -> D | None:
        """The domain value of a wire number; `unspecified` for 0, None if unknown."""
        if number == 0 and number not in self._to_domain:
            return self.unspecified
        return self._to_domain.get(number)


STREAMS: EnumMap[Stream, Any] = EnumMap(
    {
        Stream.STDOUT: pb.OUTPUT_STREAM_STDOUT,
        Stream.STDERR: pb.OUTPUT_STREAM_STDERR,
        Stream.PTY: pb.OUTPUT_STREAM_PTY,
    }
)
SIGNALS: EnumMap[Signal, Any] = EnumMap(
    {
        Signal.INTERRUPT: pb.PROCESS_SIGNAL_INTERRUPT,
        Signal.TERMINATE: pb.PROCESS_SIGNAL_TERMINATE,
        Signal.KILL: pb.PROCESS_SIGNAL_KILL,
        Signal.HANGUP: pb.PROCESS_SIGNAL_HANGUP,
    }
)
SHELL_TYPES: EnumMap[str, Any] = EnumMap(
    {
        "zsh": shell_pb.SHELL_TYPE_ZSH,
        "bash": shell_pb.SHELL_TYPE_BASH,
        "powershell": shell_pb.SHELL_TYPE_POWERSHELL,
        "sh": shell_pb.SHELL_TYPE_SH,
        "cmd": shell_pb.SHELL_TYPE_CMD,
    }
)
INHERIT: EnumMap[Inherit, Any] = EnumMap(
    {
        Inherit.ALL: shell_pb.SHELL_ENVIRONMENT_INHERIT_ALL,
        Inherit.CORE: shell_pb.SHELL_ENVIRONMENT_INHERIT_CORE,
        Inherit.NONE: shell_pb.SHELL_ENVIRONMENT_INHERIT_NONE,
    },
    unspecified=Inherit.ALL,
)
SANDBOX_MODES: EnumMap[SandboxMode, Any] = EnumMap(
    {
        SandboxMode.NONE: shell_pb.SANDBOX_MODE_NONE,
        SandboxMode.READ_ONLY: shell_pb.SANDBOX_MODE_READ_ONLY,
        SandboxMode.WORKSPACE_WRITE: shell_pb.SANDBOX_MODE_WORKSPACE_WRITE,
    },
    unspecified=SandboxMode.NONE,
)
