"""A scripted `Spawner` for the runtime tier: processes without a process.

Runtime, orchestrator and approval cases that only need "a process that prints X and exits
N" run against `ScriptedSpawner` instead of the local environment, so they need no bash, no
fork and no wall clock (httpx's `MockTransport` idea, at the runtime's spawn seam:
`server/shellgate/router/runtime/environments/spawn.py`, `Spawner`, and the handle protocol
`common/shellgate/common/process/base.py`, `ProcessHandle`).

    spawner = ScriptedSpawner({"echo hi": prints("hi\\n"), "exit 3": prints(exit_code=3)})
    async with Harness(tmp_path, spawner=spawner) as h:
        done = completed(await h.run("shell_command", {"command": "echo hi"}))
    assert spawner.commands == ["echo hi"]

A script is chosen by the command (the last argv element: `bash -c CMD` → CMD), or by a
callable that gets the request and the sandbox. Chunks before the first gate are written
at the spawn. Time only passes when the test says so:
a `Gate` in the steps holds the process until the test opens it (`gate.reached` tells the
test the process got there), `hang=True` keeps it running until it is signalled or
terminated, as `sleep 30` would. Real processes stay in `tests/integration/` and in the
backend contract suite (`tests/contract/`).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field

from shellgate.common.env_policy import ShellEnvironmentPolicy
from shellgate.common.errors import NotATtyError, ProcessExitedError, StdinClosedError
from shellgate.common.process.base import (
    ExitStatus,
    OutputChunk,
    ProcessHandle,
    Signal,
    SpawnRequest,
    Stream,
)
from shellgate.common.sandbox import SandboxMode, SandboxSpec
from shellgate.router.apply_patch.fs import PatchFileSystem
from shellgate.router.apply_patch.local_fs import LocalFileSystem
from shellgate.router.runtime.environments.spawn import Spawned, SpawnFailure

__all__ = [
    "SANDBOX_DENIED_TEXT",
    "Gate",
    "Out",
    "Script",
    "ScriptedProcess",
    "ScriptedSpawner",
    "SpawnRecord",
    "command_of",
    "denied_in_sandbox",
    "hangs",
    "prints",
]

# What a write under a read-only bubblewrap prints (the sandbox-denial heuristic's keyword).
SANDBOX_DENIED_TEXT = "touch: cannot touch 'x': Read-only file system\n"
# Fake pids start far above pid_max (4 194 304 at most), so no test can signal a real
# process through one.
_FAKE_PIDS = itertools.count(10_000_000)


@dataclass(frozen=True)
class Out:
    """One output chunk of a scripted process."""

    data: bytes
    stream: Stream = Stream.STDOUT


class Gate:
    """A point a scripted process waits at until the test opens it (no wall clock)."""

    def __init__(self) -> None:
        self._open = asyncio.Event()
        # Set when a process arrives here: the test awaits it instead of sleeping.
        self.reached = asyncio.Event()

    def open(self) -> None:
        """Let the waiting process go on."""
        self._open.set()

    async def pass_through(self) -> None:
        """Arrive, then wait until opened."""
        self.reached.set()
        await self._open.wait()


Step = Out | Gate


@dataclass(frozen=True)
class Script:
    """What a scripted process does: its steps in order, then how it ends."""

    steps: tuple[Step, ...] = ()
    exit_code: int = 0
    # Dies of this signal after the steps (e.g. signal.SIGSEGV) instead of exiting.
    exit_signal: int | None = None
    # After the steps, keep running until signalled or terminated (as `sleep 30`).
    hang: bool = False
    # Signals the process ignores (a `trap '' INT`); KILL is never ignored.
    ignores: frozenset[Signal] = frozenset()
    # What a write to stdin prints back (e.g. a tty `cat`: echo + the line again).
    on_stdin: Callable[[bytes], Sequence[Out]] | None = None
    # EOF on stdin (close_stdin, or ^D on a tty) ends the process with exit_code.
    exits_on_eof: bool = False
    # The spawn fails with this errno (e.g. errno.ENOENT for a missing cwd): nothing runs.
    spawn_errno: int = 0


def _chunks(stdout: bytes | str, stderr: bytes | str) -> tuple[Out, ...]:
    out = []
    for data, stream in ((stdout, Stream.STDOUT), (stderr, Stream.STDERR)):
        raw = data.encode() if isinstance(data, str) else data
        if raw:
            out.append(Out(raw, stream))
    return tuple(out)


def prints(stdout: bytes | str = b"", stderr: bytes | str = b"", *, exit_code: int = 0) -> Script:
    """A process that prints `stdout` (then `stderr`) and exits `exit_code`."""
    return Script(_chunks(stdout, stderr), exit_code=exit_code)


def hangs(stdout: bytes | str = b"", stderr: bytes | str = b"") -> Script:
    """A process that prints, then runs until it is signalled (`echo x; sleep 30`)."""
    return Script(_chunks(stdout, stderr), hang=True)


def denied_in_sandbox(ok: Script | None = None) -> Callable[[SpawnRequest, SandboxSpec], Script]:
    """A command that a read-only sandbox blocks (exit 1, `Read-only file system`) and that
    runs as `ok` without one."""

    def pick(_request: SpawnRequest, sandbox: SandboxSpec) -> Script:
        if sandbox.mode is SandboxMode.NONE:
            return ok or prints()
        return prints(stderr=SANDBOX_DENIED_TEXT, exit_code=1)

    return pick


def command_of(request: SpawnRequest) -> str:
    """The shell command of a request (`bash -c CMD` → CMD; the last argv element)."""
    return request.argv[-1] if request.argv else ""


class ScriptedProcess:
    """A `ProcessHandle` that plays a `Script`; owned by its spawner until `terminate`."""

    def __init__(self, script: Script, request: SpawnRequest) -> None:
        self.script = script
        self.request = request
        self._pid = next(_FAKE_PIDS)
        self._queue: asyncio.Queue[OutputChunk | None] = asyncio.Queue()
        self._exit: asyncio.Future[ExitStatus] = asyncio.get_running_loop().create_future()
        self._eof = asyncio.Event()
        self._stdin_open = request.tty or request.stdin_open
        self._output_taken = False
        # Everything written to stdin, and every signal and resize received, in order.
        self.stdin = bytearray()
        self.signals: list[Signal] = []
        self.resizes: list[tuple[int, int]] = []
        # The chunks before the first gate are written at once (a process signalled right
        # after its start has still printed them: scripts stay deterministic).
        steps = list(script.steps)
        while steps and isinstance(steps[0], Out):
            out = steps.pop(0)
            self._queue.put_nowait(OutputChunk(out.stream, out.data))
        # Owned here: cancelled and awaited by `_end` (exit, signal, terminate).
        self._player = asyncio.create_task(self._play(steps), name=f"scripted-{self._pid}")

    @property
    def pid(self) -> int | None:
        """A fake pid (never a real process's)."""
        return self._pid

    @property
    def pgid(self) -> int | None:
        """Same as the pid: the process leads its own (fake) group."""
        return self._pid

    @property
    def exited(self) -> bool:
        """The exit status is known."""
        return self._exit.done()

    async def _play(self, steps: list[Step]) -> None:
        for step in steps:
            if isinstance(step, Gate):
                await step.pass_through()
            else:
                self._queue.put_nowait(OutputChunk(step.stream, step.data))
        if self.script.exits_on_eof:
            await self._eof.wait()
        elif self.script.hang:
            # Runs until a signal or `terminate` ends it (in `_end`).
            await asyncio.Event().wait()
        if self.script.exit_signal is not None:
            self._finish(ExitStatus(signal=self.script.exit_signal))
        else:
            self._finish(ExitStatus(code=self.script.exit_code))

    def _finish(self, status: ExitStatus) -> None:
        if not self._exit.done():
            self._exit.set_result(status)
            # The streams reach EOF with the exit (no grandchild holds them).
            self._queue.put_nowait(None)

    async def _end(self, status: ExitStatus) -> None:
        player, current = self._player, asyncio.current_task()
        if player is not current and not player.done():
            player.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await player
        self._finish(status)

    async def _chunks(self) -> AsyncIterator[OutputChunk]:
        while (chunk := await self._queue.get()) is not None:
            yield chunk

    def output(self) -> AsyncIterator[OutputChunk]:
        """Chunks in script order until the exit; call once."""
        assert not self._output_taken, "output() is called once"
        self._output_taken = True
        return self._chunks()

    async def write(self, data: bytes) -> None:
        """Record stdin; a tty's ^C is SIGINT and ^D is EOF, as the line discipline makes them."""
        if self.exited:
            raise ProcessExitedError("process has exited")
        if not self._stdin_open:
            raise StdinClosedError("stdin is not open")
        self.stdin += data
        if self.request.tty and b"\x03" in data:
            await self.signal(Signal.INTERRUPT)
            return
        text = data.replace(b"\x04", b"") if self.request.tty else data
        if text and self.script.on_stdin is not None:
            for out in self.script.on_stdin(text):
                self._queue.put_nowait(OutputChunk(out.stream, out.data))
        if self.request.tty and b"\x04" in data:
            self._eof.set()

    async def close_stdin(self) -> None:
        """EOF: ^D on a tty, the pipe closed otherwise."""
        if self.request.tty:
            await self.write(b"\x04")
            return
        if not self._stdin_open:
            raise StdinClosedError("stdin is not open")
        self._stdin_open = False
        self._eof.set()

    async def resize(self, rows: int, cols: int) -> None:
        """Record the size; pipes have none."""
        if not self.request.tty:
            raise NotATtyError("process has no tty")
        if self.exited:
            raise ProcessExitedError("process has exited")
        self.resizes.append((rows, cols))

    async def signal(self, sig: Signal) -> None:
        """Deliver `sig`: the process dies of it unless the script ignores it."""
        if self.exited:
            raise ProcessExitedError("process has exited")
        self.signals.append(sig)
        if sig in self.script.ignores and sig is not Signal.KILL:
            return
        await self._end(ExitStatus(signal=sig.value))

    async def wait(self) -> ExitStatus:
        """The exit status (awaitable many times)."""
        return await asyncio.shield(self._exit)

    async def terminate(self) -> None:
        """TERM (KILL when TERM is ignored) and return once it has ended."""
        if self.exited:
            await self._end(self._exit.result())
            return
        ignored = Signal.TERMINATE in self.script.ignores
        await self._end(ExitStatus(signal=(Signal.KILL if ignored else Signal.TERMINATE).value))


@dataclass(frozen=True)
class SpawnRecord:
    """One spawn the runtime asked for."""

    request: SpawnRequest
    sandbox: SandboxSpec
    detach: bool
    owner: str
    env_policy: ShellEnvironmentPolicy | None

    @property
    def command(self) -> str:
        """The shell command (the last argv element)."""
        return command_of(self.request)


ScriptFor = Script | Callable[[SpawnRequest, SandboxSpec], Script]


@dataclass
class ScriptedSpawner:
    """A `Spawner` whose processes play scripts; every spawn is recorded.

    `scripts` maps a command (`command_of`) to its script, or is one script (or callable)
    for every command. An unscripted command fails the spawn loudly naming it.
    """

    scripts: Mapping[str, ScriptFor] | ScriptFor = field(default_factory=prints)
    environment_id: str = "local"
    remote: bool = False
    fs: PatchFileSystem = field(default_factory=LocalFileSystem)
    spawned: list[SpawnRecord] = field(default_factory=list)
    processes: list[ScriptedProcess] = field(default_factory=list)

    @property
    def commands(self) -> list[str]:
        """The commands spawned so far, in order."""
        return [record.command for record in self.spawned]

    def _script(self, request: SpawnRequest, sandbox: SandboxSpec) -> Script:
        scripts = self.scripts
        if isinstance(scripts, Mapping):
            command = command_of(request)
            if command not in scripts:
                raise AssertionError(f"unscripted command {command!r} (argv {request.argv})")
            scripts = scripts[command]
        return scripts(request, sandbox) if callable(scripts) else scripts

    async def spawn(
        self,
        request: SpawnRequest,
        sandbox: SandboxSpec,
        *,
        detach: bool,
        owner: str,
        env_policy: ShellEnvironmentPolicy | None = None,
    ) -> Spawned:
        """Record the spawn and start the scripted process (or fail as scripted)."""
        self.spawned.append(SpawnRecord(request, sandbox, detach, owner, env_policy))
        script = self._script(request, sandbox)
        if script.spawn_errno:
            raise SpawnFailure(os.strerror(script.spawn_errno), script.spawn_errno)
        proc = ScriptedProcess(script, request)
        self.processes.append(proc)
        handle: ProcessHandle = proc
        return Spawned(handle, str(proc.pid), sandbox.mode is not SandboxMode.NONE)

    def filesystem(self) -> PatchFileSystem:
        """The filesystem apply_patch writes through (this host's unless one is given)."""
        return self.fs

    async def identify_cwd(self, path: str) -> tuple[int, int] | None:
        """No pinning: scripted processes run nowhere, so there is no directory to pin."""
        del path
        return None

    async def aclose(self) -> None:
        """End every scripted process still running (as the registry's close kills them)."""
        for proc in self.processes:
            if not proc.exited:
                await proc.terminate()
