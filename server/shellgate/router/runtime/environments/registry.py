"""Environments: the embedded local one (in-process backend) and remote daemons (spec 06 §5)."""

from __future__ import annotations

import asyncio
import os
import pwd
import shutil
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from shellgate.common.env_policy import ShellEnvironmentPolicy
from shellgate.common.errors import EnvironmentNotFoundError, SandboxUnavailableError, SpawnError
from shellgate.common.process.base import SpawnRequest
from shellgate.common.process.cwd_pin import identify_cwd
from shellgate.common.process.limits import MIB, ProcessLimits
from shellgate.common.process.local import LocalBackend
from shellgate.common.process.run_as import RunAs
from shellgate.common.sandbox import SandboxMode, SandboxSpec, wrap_argv
from shellgate.common.sandbox_masks import user_named
from shellgate.router.apply_patch.fs import PatchFileSystem
from shellgate.router.apply_patch.local_fs import LocalFileSystem
from shellgate.router.handler.shells import HostShellFacts, Shell, host_user_shell
from shellgate.router.runtime.environments.egress import EnvironmentEgress
from shellgate.router.runtime.environments.remote.environment import RemoteEnvironment
from shellgate.router.runtime.environments.remote.info import EnvironmentInfo
from shellgate.router.runtime.environments.spawn import Spawned, SpawnFailure

__all__ = [
    "LOCAL_ENVIRONMENT_ID",
    "EnvironmentRegistry",
    "EnvironmentStatus",
    "LocalEnvironment",
    "gather_host_shell_facts",
]

LOCAL_ENVIRONMENT_ID = "local"
_SHELL_NAMES = ("bash", "zsh", "sh", "pwsh", "powershell")
_STANDARD_SHELL_PATHS = (
    "/bin/bash",
    "/usr/bin/bash",
    "/bin/zsh",
    "/usr/bin/zsh",
    "/bin/sh",
    "/usr/bin/sh",
    "/usr/local/bin/pwsh",
    "/usr/bin/pwsh",
    "/bin/pwsh",
)


def gather_host_shell_facts(configured_shell: str | None = None) -> HostShellFacts:
    """Read the host facts shell selection needs (passwd shell, PATH lookups, paths)."""
    try:
        passwd_shell: str | None = pwd.getpwuid(os.getuid()).pw_shell or None
    except KeyError:
        passwd_shell = None
    which: dict[str, str] = {}
    for name in _SHELL_NAMES:
        found = shutil.which(name)
        if found:
            which[name] = found
    existing = frozenset(p for p in _STANDARD_SHELL_PATHS if os.path.exists(p))
    return HostShellFacts(
        configured_shell=configured_shell,
        passwd_shell=passwd_shell,
        which=which,
        existing=existing,
    )


# Output here is streamed one chunk per message: reading a whole (1 MiB) pipe at once makes
# each read one message without a join copy, and a call's 10 000 deltas carry more bytes.
ROUTER_PROCESS_LIMITS = ProcessLimits(read_chunk_bytes=MIB, max_chunk_bytes=MIB)


class LocalEnvironment:
    """The embedded local environment: the in-process local backend, bubblewrap sandbox."""

    def __init__(
        self,
        *,
        cwd: str | None = None,
        configured_shell: str | None = None,
        backend: LocalBackend | None = None,
        masked_paths: tuple[str, ...] = (),
        run_as: RunAs | None = None,
        egress: EnvironmentEgress | None = None,
    ) -> None:
        self.cwd = cwd or os.getcwd()
        # `[network]` enabled: sandboxed commands with network go through its proxy only.
        self.egress = egress
        # The router's own credentials (token files, keys, its config): empty in a sandbox.
        self._masked_paths = masked_paths
        # Under run_as bubblewrap runs as that user: masks go only where it can reach.
        self._bwrap_user = user_named(run_as.user) if run_as is not None else None
        self.shell_facts = gather_host_shell_facts(configured_shell)
        self.shell: Shell = host_user_shell(self.shell_facts)
        self._backend = backend or LocalBackend(ROUTER_PROCESS_LIMITS, run_as=run_as)
        self._fs = LocalFileSystem()

    @property
    def environment_id(self) -> str:
        """Always `local`."""
        return LOCAL_ENVIRONMENT_ID

    @property
    def remote(self) -> bool:
        """Never remote."""
        return False

    async def spawn(
        self,
        request: SpawnRequest,
        sandbox: SandboxSpec,
        *,
        detach: bool,
        owner: str,
        env_policy: ShellEnvironmentPolicy | None = None,
    ) -> Spawned:
        """Spawn on this host, wrapped in bubblewrap when a sandbox is asked for."""
        # Local processes are owned by this router process; request.env is already the
        # policy's result on this host.
        del detach, owner, env_policy
        env = dict(request.env)
        argv = request.argv
        if sandbox.mode is not SandboxMode.NONE:
            if self.egress is not None:
                sandbox = await self.egress.govern(sandbox)
            try:
                argv, extra = wrap_argv(
                    request.argv, request.cwd, sandbox,
                    masked_paths=self._masked_paths, tty=request.tty, user=self._bwrap_user,
                    cwd_identity=request.cwd_identity,
                )  # fmt: skip
            except (SandboxUnavailableError, SpawnError) as exc:
                raise SpawnFailure(exc.message) from exc
            env.update(extra)
        spawn = SpawnRequest(
            argv=argv,
            cwd=request.cwd,
            env=env,
            tty=request.tty,
            rows=request.rows,
            cols=request.cols,
            stdin_open=request.stdin_open,
            # Bubblewrap starts in the approved directory too; the command is checked again
            # on the sandboxed side (common/process/cwd_pin).
            cwd_identity=request.cwd_identity,
        )
        try:
            handle = await self._backend.start(spawn)
        except SpawnError as exc:
            message = os.strerror(exc.errno) if exc.errno else exc.message
            raise SpawnFailure(message, exc.errno or 0) from exc
        return Spawned(handle, str(handle.pid), sandbox.mode is not SandboxMode.NONE)

    def filesystem(self) -> PatchFileSystem:
        """This host's filesystem."""
        return self._fs

    async def identify_cwd(self, path: str) -> tuple[int, int] | None:
        """(st_dev, st_ino) of `path` on this host; MISSING_CWD when there is none."""
        return identify_cwd(path)

    async def aclose(self) -> None:
        """Kill every process this environment started, then stop its egress proxy."""
        await self._backend.aclose()
        if self.egress is not None:
            await self.egress.aclose()


@dataclass(frozen=True)
class EnvironmentStatus:
    """One environment as ListEnvironments reports it."""

    environment_id: str
    remote: bool
    target: str
    reachable: bool
    last_error: str
    # What the daemon reported when it last connected; None for local or never reached.
    info: EnvironmentInfo | None


Environment = LocalEnvironment | RemoteEnvironment
# Called when an environment id is unknown (discovery looks again before the miss counts).
UnknownRefresh = Callable[[], Awaitable[None]]


class EnvironmentRegistry:
    """The configured environments in order; an unreachable one is reported, never replaced."""

    def __init__(
        self, local: LocalEnvironment | None, remotes: Sequence[RemoteEnvironment] = ()
    ) -> None:
        self._envs: dict[str, Environment] = {}
        if local is not None:
            self._envs[local.environment_id] = local
        for env in remotes:
            if env.environment_id in self._envs:
                raise ValueError(f"duplicate environment id {env.environment_id}")
            self._envs[env.environment_id] = env
        self._unknown_refreshers: list[UnknownRefresh] = []
        self._session_owner_ttl_ms: int | None = None

    def set_session_owner_ttl(self, ttl_ms: int) -> None:
        """The daemon owner TTL of unified-exec processes on every remote environment,
        discovered ones included (routers sharing sessions tie it to the thread TTL)."""
        self._session_owner_ttl_ms = ttl_ms
        for env in self.remotes():
            env.owner_ttl_ms = ttl_ms

    @property
    def local(self) -> LocalEnvironment | None:
        """The embedded local environment, if configured."""
        env = self._envs.get(LOCAL_ENVIRONMENT_ID)
        return env if isinstance(env, LocalEnvironment) else None

    def get(self, environment_id: str) -> Environment:
        """An environment by id; unknown → NOT_FOUND."""
        env = self._envs.get(environment_id)
        if env is None:
            raise EnvironmentNotFoundError(f"unknown environment {environment_id}")
        return env

    def on_unknown(self, refresh: UnknownRefresh) -> None:
        """Register a discovery refresh to run before an unknown id is reported."""
        self._unknown_refreshers.append(refresh)

    @property
    def discovers(self) -> bool:
        """Whether environments may appear at run time (discovery is configured)."""
        return bool(self._unknown_refreshers)

    async def refresh_unknown(self) -> None:
        """Let discovery look again (each refresher coalesces and rate-limits its lookups)."""
        if self._unknown_refreshers:
            await asyncio.gather(*(refresh() for refresh in self._unknown_refreshers))

    async def find(self, environment_id: str) -> Environment:
        """An environment by id; an unknown one first triggers a discovery refresh."""
        if environment_id not in self._envs:
            await self.refresh_unknown()
        return self.get(environment_id)

    def add(self, env: RemoteEnvironment) -> None:
        """Add a discovered environment (ids are unique; an existing one is kept)."""
        if env.environment_id in self._envs:
            raise ValueError(f"duplicate environment id {env.environment_id}")
        if self._session_owner_ttl_ms is not None:
            env.owner_ttl_ms = self._session_owner_ttl_ms
        self._envs[env.environment_id] = env

    def remove(self, environment_id: str) -> None:
        """Forget a discovered environment (pruned; the caller closes it)."""
        self._envs.pop(environment_id, None)

    def remotes(self) -> list[RemoteEnvironment]:
        """The remote environments in order."""
        return [e for e in self._envs.values() if isinstance(e, RemoteEnvironment)]

    def ids(self) -> list[str]:
        """Environment ids in configuration order."""
        return list(self._envs)

    async def statuses(
        self, *, refresh: bool = False, visible: frozenset[str] | None = None
    ) -> list[EnvironmentStatus]:
        """Reachability, last error and info of the environments in `visible` (None: all),
        probing them when asked; an environment a caller may not see is never probed."""
        out: list[EnvironmentStatus] = []
        # A copy: discovery may add environments while the probes await.
        for env in list(self._envs.values()):
            if visible is not None and env.environment_id not in visible:
                continue
            if isinstance(env, LocalEnvironment):
                out.append(EnvironmentStatus(env.environment_id, False, "", True, "", None))
                continue
            if refresh:
                await env.probe()
            out.append(
                EnvironmentStatus(
                    env.environment_id,
                    True,
                    env.target,
                    env.reachable,
                    env.breaker.describe() if env.breaker.open else env.last_error or "",
                    env.info,
                )
            )
        return out

    async def aclose(self) -> None:
        """Close every environment (kills local processes, closes channels)."""
        for env in list(self._envs.values()):
            await env.aclose()
