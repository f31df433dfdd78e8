"""The seam between the runtime and an environment: spawn a process, with or without sandbox."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from shellgate.common.env_policy import ShellEnvironmentPolicy
from shellgate.common.process.base import ProcessHandle, SpawnRequest
from shellgate.common.sandbox import SandboxMode, SandboxSpec
from shellgate.router.apply_patch.fs import PatchFileSystem

__all__ = [
    "NO_SANDBOX",
    "EnvironmentUnavailableError",
    "SandboxMode",
    "SandboxSpec",
    "SpawnFailure",
    "Spawned",
    "Spawner",
]

NO_SANDBOX = SandboxSpec()


class EnvironmentUnavailableError(Exception):
    """The environment cannot be reached now; nothing was started (spec 06 §5)."""

    def __init__(self, environment_id: str, reason: str) -> None:
        super().__init__(f"environment `{environment_id}` is unavailable: {reason}")
        self.environment_id = environment_id
        self.reason = reason


class SpawnFailure(Exception):
    """The process could not be started; `errno` 0 when the failure has none."""

    def __init__(self, message: str, errno: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.errno = errno


@dataclass(frozen=True)
class Spawned:
    """A started process and how it was started."""

    handle: ProcessHandle
    # The backend's id for it: the local pid as text, or the daemon's process_id.
    process_id: str
    sandboxed: bool


class Spawner(Protocol):
    """One environment as the runtime sees it."""

    @property
    def environment_id(self) -> str:
        """The environment id (`local` for the embedded one)."""
        ...

    @property
    def remote(self) -> bool:
        """Whether a daemon spawns the processes."""
        ...

    async def spawn(
        self,
        request: SpawnRequest,
        sandbox: SandboxSpec,
        *,
        detach: bool,
        owner: str,
        env_policy: ShellEnvironmentPolicy | None = None,
    ) -> Spawned:
        """Start a process; SpawnFailure or EnvironmentUnavailableError when nothing ran.

        `detach` keeps a remote process alive when its stream ends (unified exec).
        `env_policy` is the turn's shell environment policy: a daemon applies it to its own
        environment before the request overlay (spec 05 §5.5); locally `request.env`
        already is its result.
        """
        ...

    def filesystem(self) -> PatchFileSystem:
        """The environment's own filesystem, for the apply_patch runtime (blocking calls)."""
        ...

    async def identify_cwd(self, path: str) -> tuple[int, int] | None:
        """The directory `path` names now on the environment's host (common/process/cwd_pin).

        None when the environment cannot pin a cwd (an older daemon, an SSH backend): its
        command then runs by path. EnvironmentUnavailableError when it cannot be asked.
        """
        ...
