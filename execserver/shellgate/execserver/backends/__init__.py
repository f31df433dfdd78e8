"""Process backends of the exec-server: one protocol, a local and an SSH implementation."""

from shellgate.common.process.base import (
    Backend,
    ExitStatus,
    OutputChunk,
    ProcessHandle,
    Signal,
    SpawnRequest,
    Stream,
)

__all__ = [
    "Backend",
    "ExitStatus",
    "OutputChunk",
    "ProcessHandle",
    "Signal",
    "SpawnRequest",
    "Stream",
]
