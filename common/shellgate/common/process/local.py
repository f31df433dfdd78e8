"""Local backend: pipes or a real PTY, one session/process group per process, never orphans."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import signal
import struct
import subprocess
import termios
from collections.abc import AsyncIterator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from shellgate.common.errors import (
    NotATtyError,
    ProcessExitedError,
    SpawnError,
    StdinClosedError,
)
from shellgate.common.process.base import (
    ExitStatus,
    OutputChunk,
    ProcessHandle,
    Signal,
    SpawnRequest,
    Stream,
)
from shellgate.common.process.cwd_pin import spawnable_in_approved_cwd
from shellgate.common.process.escapes import EscapeReaper
from shellgate.common.process.fdio import read_chunks, write_all
from shellgate.common.process.fdoutput import FdOutput
from shellgate.common.process.guardian import GroupGuardian
from shellgate.common.process.launch import (
    Launch,
    needs_shim,
    plan_launch,
)
from shellgate.common.process.limits import ProcessLimits
from shellgate.common.process.procgroup import group_members, kill_group, signal_group
from shellgate.common.process.run_as import RunAs

# Below this many running processes, a spawn with none in flight runs on the loop thread.
_INLINE_MAX_LIVE = 2
# How often escaped descendants are looked for while a command runs (see escapes.py).
ESCAPE_SWEEP_S = 0.25
_log = logging.getLogger(__name__)


def _close_all(fds: Sequence[int | None]) -> None:
    for fd in fds:
        if fd is not None and fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)


def _spawn_error(exc: OSError, request: SpawnRequest) -> SpawnError:
    # Popen names what failed (the program, or the cwd when chdir failed); check_spawnable
    # words its errors the same way.
    subject = exc.filename if exc.filename is not None else request.cwd
    return SpawnError(f"{exc.strerror}: {subject!r}", exc.errno or 0)


def _set_winsize(fd: int, rows: int, cols: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


class LocalProcess:
    """One local process (its own session and group); owns every fd it reads."""

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        child_pid: int,
        out_fds: list[tuple[int, Stream]],
        stdin_fd: int | None,
        master_fd: int | None,
        limits: ProcessLimits,
        on_released: Callable[[LocalProcess], None],
        on_exit: Callable[[], None],
    ) -> None:
        self._on_released = on_released
        self._on_exit = on_exit
        self._released = False
        self._popen = popen
        self._child_pid = child_pid
        self._stdin_fd = stdin_fd
        self._master_fd = master_fd
        self._limits = limits
        self._exit: asyncio.Future[ExitStatus] = asyncio.get_running_loop().create_future()
        self._output = FdOutput(
            out_fds,
            read_bytes=limits.read_chunk_bytes,
            max_chunk_bytes=limits.max_chunk_bytes,
            buffer_bytes=limits.output_buffer_bytes,
            keep_open=frozenset({master_fd} if master_fd is not None else ()),
            grow_pipes_to=limits.pipe_buffer_bytes,
        )
        self._watch_exit()

    @property
    def pid(self) -> int | None:
        """Pid of the real child (the shim's child when the shim supervises)."""
        return self._child_pid

    @property
    def pgid(self) -> int | None:
        """Process group id (the pid Popen started)."""
        return self._popen.pid

    def _watch_exit(self) -> None:
        loop = asyncio.get_running_loop()
        pidfd = os.pidfd_open(self._popen.pid)

        def exited() -> None:
            loop.remove_reader(pidfd)
            os.close(pidfd)
            code = self._popen.wait()
            status = ExitStatus(code=code) if code >= 0 else ExitStatus(signal=-code)
            if not self._exit.done():
                self._exit.set_result(status)
            self._on_exit()

        loop.add_reader(pidfd, exited)

    def output(self) -> AsyncIterator[OutputChunk]:
        """Yield chunks until every stream reached EOF (closing it early abandons them)."""
        return self._output.chunks()

    def _exited(self) -> bool:
        return self._exit.done()

    async def write(self, data: bytes) -> None:
        """Write to the PTY or the stdin pipe."""
        if self._exited():
            raise ProcessExitedError("process has exited")
        fd = self._master_fd if self._master_fd is not None else self._stdin_fd
        if fd is None:
            raise StdinClosedError("stdin is not open")
        try:
            await asyncio.wait_for(write_all(fd, data), self._limits.write_timeout_ms / 1000)
        except (BrokenPipeError, OSError) as exc:
            raise StdinClosedError(f"stdin write failed: {exc.strerror}") from exc

    async def close_stdin(self) -> None:
        """EOF: close the stdin pipe, or send ^D on a PTY."""
        if self._master_fd is not None:
            await self.write(b"\x04")
            return
        if self._stdin_fd is None:
            raise StdinClosedError("stdin is not open")
        fd, self._stdin_fd = self._stdin_fd, None
        os.close(fd)

    async def resize(self, rows: int, cols: int) -> None:
        """Set the PTY window size (the kernel sends SIGWINCH to the foreground group)."""
        if self._master_fd is None:
            raise NotATtyError("process has no tty")
        if self._exited():
            raise ProcessExitedError("process has exited")
        _set_winsize(self._master_fd, rows, cols)

    async def signal(self, sig: Signal) -> None:
        """Send sig to the whole process group."""
        if self._exited() or not signal_group(self._popen.pid, sig.value):
            raise ProcessExitedError("process has exited")

    async def wait(self) -> ExitStatus:
        """Wait for the exit."""
        return await asyncio.shield(self._exit)

    async def terminate(self) -> None:
        """TERM the group, grace, KILL, wait until every member is gone, release fds."""
        if self._released:
            return
        await kill_group(self._popen.pid, self._limits.kill_grace_ms, self._limits.gone_timeout_ms)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self.wait(), self._limits.gone_timeout_ms / 1000)
        await self._release()

    async def _release(self) -> None:
        # The group is dead, so the readers see EOF promptly; a grandchild that escaped the
        # group could still hold a pipe, hence the bounded drain.
        if not await self._output.wait_eof(self._limits.drain_ms):
            self._output.abandon()
        for fd in (self._stdin_fd, self._master_fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._stdin_fd = self._master_fd = None
        if self._popen.returncode is None:
            self._popen.kill()
            self._popen.wait()
        self._released = True
        self._on_released(self)


class LocalBackend:
    """Spawns processes on this host, each group registered with the group guardian."""

    def __init__(self, limits: ProcessLimits | None = None, run_as: RunAs | None = None) -> None:
        self._limits = limits or ProcessLimits()
        # Every command then runs as this other user (see run_as.py).
        self._run_as = run_as
        self._live: set[LocalProcess] = set()
        # Started, exit not yet seen. Not len(_live): the daemon keeps exited processes for
        # Attach, which sent every Start to the thread pool (measured +0.3 ms CPU each).
        self._running = 0
        self._guardian = GroupGuardian()
        # A few threads: concurrent starts overlap their exec waits; more buys nothing on
        # small hosts and each is a thread for the daemon's lifetime.
        self._spawner = ThreadPoolExecutor(max_workers=4, thread_name_prefix="spawn")
        self._pool_spawns = 0
        # Descendants that escape their group (setsid, double fork) die with their command.
        self._escapes = EscapeReaper(
            self._guardian.register, self._guardian.unregister, lambda: self._guardian.pids
        )
        self._sweep_timer: asyncio.TimerHandle | None = None

    @property
    def name(self) -> str:
        """Backend name."""
        return "local"

    def _released(self, proc: LocalProcess) -> None:
        self._live.discard(proc)
        if proc.pgid is not None:
            self._guardian.unregister(proc.pgid)
            self._escapes.root_ended(proc.pgid)
        self._schedule_sweep()

    def _exited(self) -> None:
        self._running -= 1

    def _schedule_sweep(self) -> None:
        # Owned by this backend: one pending timer at most, cancelled by aclose. Escapes are
        # found within a sweep interval, so they are guarded against this process's death.
        if self._sweep_timer is not None or not self._escapes.active:
            return
        loop = asyncio.get_running_loop()

        def tick() -> None:
            self._sweep_timer = None
            try:
                self._escapes.sweep()
            except Exception:  # a /proc race must not stop the sweeps
                _log.exception("escaped-descendant sweep failed")
            self._schedule_sweep()

        self._sweep_timer = loop.call_later(ESCAPE_SWEEP_S, tick)

    async def start(self, request: SpawnRequest) -> ProcessHandle:
        """Spawn argv directly; raise SpawnError when nothing started."""
        if not request.argv:
            raise SpawnError("argv must not be empty", 0)
        request, pinned = spawnable_in_approved_cwd(request)  # cwd_pin: the fd to close
        if self._run_as is not None:
            # setpriv execs the program itself, so a custom arg0 cannot survive the switch
            # (as under bubblewrap).
            request = replace(request, argv=self._run_as.wrap(request.argv), arg0=None)
        self._guardian.bind(asyncio.get_running_loop())
        # The status pipe only serves the Python shim (rare: a PTY without util-linux).
        status_r, status_w = os.pipe2(os.O_CLOEXEC) if needs_shim(request) else (-1, -1)
        launch = plan_launch(request, status_w, os.getpid())
        fds_to_close = [*([status_w] if launch.shim else []), *pinned]
        master: int | None = None
        stdin_parent: int | None = None
        out: list[tuple[int, Stream]] = []
        try:
            if request.tty:
                master, slave = os.openpty()
                fds_to_close.append(slave)
                _set_winsize(slave, request.rows, request.cols)
                stdio = (slave, slave, slave)
                out.append((master, Stream.PTY))
            else:
                if request.stdin_open:
                    stdin_child, stdin_parent = os.pipe2(os.O_CLOEXEC)
                else:
                    # Read-only, as Codex opens it (subprocess.DEVNULL would be read-write).
                    stdin_child = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
                fds_to_close.append(stdin_child)
                out_r, out_w = os.pipe2(os.O_CLOEXEC)
                err_r, err_w = os.pipe2(os.O_CLOEXEC)
                fds_to_close += [out_w, err_w]
                out += [(out_r, Stream.STDOUT), (err_r, Stream.STDERR)]
                stdio = (stdin_child, out_w, err_w)
        except BaseException:
            _close_all([*fds_to_close, *(fd for fd, _ in out), stdin_parent])
            if launch.shim:
                os.close(status_r)
            raise
        parent_fds = [*(fd for fd, _ in out), stdin_parent]
        if launch.shim:
            parent_fds.append(status_r)
        # From here on _spawn owns every fd: it closes the child's ends once Popen is done
        # and the parent's ends when nothing started.
        popen = await self._spawn(launch, stdio, request, status_w, fds_to_close, parent_fds)
        child_pid = popen.pid
        if launch.shim:
            status = await self._read_status(status_r, popen)
            if not status.startswith(b"ok "):
                for fd, _ in out:
                    os.close(fd)
                if stdin_parent is not None:
                    os.close(stdin_parent)
                await asyncio.to_thread(popen.wait)
                self._guardian.unregister(popen.pid)
                detail = status[4:].decode(errors="replace") if status else "0 supervisor failed"
                number, _, text = detail.partition(" ")
                raise SpawnError(text, int(number) if number.isdigit() else 0)
            child_pid = int(status[3:])
        proc = LocalProcess(
            popen, child_pid, out, stdin_parent, master, self._limits, self._released, self._exited
        )
        self._live.add(proc)
        self._running += 1
        self._schedule_sweep()
        return proc

    def _popen(
        self, launch: Launch, stdio: tuple[int, int, int], request: SpawnRequest, status_w: int
    ) -> subprocess.Popen[bytes]:
        # The escape sweep must not take this child for an orphan (and reap it) before it
        # is recorded as a root: the spawn and the record happen inside `spawning`.
        with self._escapes.spawning() as since:
            popen = subprocess.Popen(
                launch.argv,
                executable=launch.executable,
                stdin=stdio[0],
                stdout=stdio[1],
                stderr=stdio[2],
                cwd=request.cwd,
                env=dict(request.env),
                pass_fds=(status_w,) if launch.shim else (),
                close_fds=True,
                start_new_session=launch.new_session,
            )
            # Registered at once, on the spawning thread: from here on a daemon crash still
            # takes the whole group (grandchildren included) down.
            self._guardian.register(popen.pid)
            self._escapes.root_started(popen.pid, since)
        return popen

    async def _spawn(
        self,
        launch: Launch,
        stdio: tuple[int, int, int],
        request: SpawnRequest,
        status_w: int,
        child_fds: list[int],
        parent_fds: list[int | None],
    ) -> subprocess.Popen[bytes]:
        def spawn() -> subprocess.Popen[bytes]:
            try:
                return self._popen(launch, stdio, request, status_w)
            finally:
                _close_all(child_fds)

        # Popen runs on a spawner thread when other commands are running. Its vfork parks
        # the calling thread (without the GIL) until the child has exec'd, and when the CPUs
        # are busy — many commands starting at once — the child waits its turn for a CPU:
        # on the loop thread that stalled every other call for milliseconds per spawn. A
        # lone spawn stays on the loop: the thread hop would only add latency. The shim
        # arms PR_SET_PDEATHSIG, which is tied to the forking *thread*: it is always forked
        # from the loop thread, which lives as long as the daemon.
        inline = launch.shim or (self._running < _INLINE_MAX_LIVE and not self._pool_spawns)
        try:
            return spawn() if inline else await self._on_spawner(spawn, child_fds, parent_fds)
        except asyncio.CancelledError:
            raise  # the spawn is still running on its thread: _discard frees its fds
        except OSError as exc:
            _close_all(parent_fds)
            raise _spawn_error(exc, request) from exc
        except BaseException:
            _close_all(parent_fds)
            raise

    async def _on_spawner(
        self,
        spawn: Callable[[], subprocess.Popen[bytes]],
        child_fds: list[int],
        parent_fds: list[int | None],
    ) -> subprocess.Popen[bytes]:
        try:
            future = asyncio.get_running_loop().run_in_executor(self._spawner, spawn)
        except BaseException:
            _close_all(child_fds)  # spawn() never ran, so it closed nothing
            raise
        self._pool_spawns += 1
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            # The spawn still completes on its thread: kill what it started, free the fds.
            future.add_done_callback(lambda done: self._discard(done, parent_fds))
            raise
        finally:
            self._pool_spawns -= 1

    def _discard(
        self, done: asyncio.Future[subprocess.Popen[bytes]], parent_fds: list[int | None]
    ) -> None:
        _close_all(parent_fds)
        if done.cancelled() or done.exception() is not None:
            return
        popen = done.result()
        signal_group(popen.pid, signal.SIGKILL)
        # A PTY child becomes its group's leader only once `setsid` has run: kill the
        # process itself too, so the wait below cannot hang on it.
        with contextlib.suppress(OSError):
            popen.kill()
        # Reaped off the loop (the KILL lands at once; wait() is then immediate).
        try:
            reaping = asyncio.get_running_loop().run_in_executor(self._spawner, popen.wait)
        except RuntimeError:  # shutting down: the KILL is delivered, wait() is immediate
            popen.wait()
            self._guardian.unregister(popen.pid)
            return
        reaping.add_done_callback(lambda _: self._guardian.unregister(popen.pid))

    async def _read_status(self, fd: int, popen: subprocess.Popen[bytes]) -> bytes:
        data = b""
        try:
            async with asyncio.timeout(self._limits.spawn_timeout_ms / 1000):
                async for part in read_chunks(fd, 4096):
                    data += part
        except TimeoutError:
            popen.kill()
            data = b"err 0 spawn timed out"
        finally:
            os.close(fd)
        return data

    async def aclose(self) -> None:
        """Terminate every process started here, then let the guardian go."""
        live, self._live = list(self._live), set()
        await asyncio.gather(*(p.terminate() for p in live), return_exceptions=True)
        if self._sweep_timer is not None:
            self._sweep_timer.cancel()
            self._sweep_timer = None
        self._escapes.sweep()
        self._guardian.detach_loop()
        await asyncio.to_thread(self._guardian.close)
        await asyncio.to_thread(self._spawner.shutdown)


__all__ = ["LocalBackend", "LocalProcess", "group_members"]
