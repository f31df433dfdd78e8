"""Local backend: pipes or a real PTY, one session/process group per process, never orphans."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import struct
import subprocess
import sys
import termios
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from shellgate.execserver.backends.base import (
    ExitStatus,
    OutputChunk,
    ProcessHandle,
    Signal,
    SpawnRequest,
    Stream,
)
from shellgate.execserver.backends.fdio import read_chunks, write_all
from shellgate.execserver.backends.procgroup import group_members, kill_group, signal_group
from shellgate.execserver.config import ProcessLimits
from shellgate.execserver.errors import (
    NotATtyError,
    ProcessExitedError,
    SpawnError,
    StdinClosedError,
)

_SHIM = str(Path(__file__).with_name("_shim.py"))
_EOF = None


def _set_winsize(fd: int, rows: int, cols: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


class LocalProcess:
    """One local process: the shim (group leader) and its child; owns every fd it reads."""

    def __init__(
        self,
        popen: subprocess.Popen[bytes],
        child_pid: int,
        out_fds: list[tuple[int, Stream]],
        stdin_fd: int | None,
        master_fd: int | None,
        limits: ProcessLimits,
        on_released: Callable[[LocalProcess], None],
    ) -> None:
        self._on_released = on_released
        self._released = False
        self._popen = popen
        self._child_pid = child_pid
        self._stdin_fd = stdin_fd
        self._master_fd = master_fd
        self._limits = limits
        self._exit: asyncio.Future[ExitStatus] = asyncio.get_running_loop().create_future()
        # Bounded queue between the fd readers and the consumer: a slow consumer stops our
        # reads, so the kernel pipe fills and the child blocks instead of our memory growing.
        self._queue: asyncio.Queue[OutputChunk | None] = asyncio.Queue(limits.output_queue_chunks)
        self._tasks = [asyncio.create_task(self._pump(fd, s)) for fd, s in out_fds]
        self._open_streams = len(out_fds)
        self._watch_exit()

    @property
    def pid(self) -> int | None:
        """Pid of the real child (the shim's child)."""
        return self._child_pid

    @property
    def pgid(self) -> int | None:
        """Process group id (the shim's pid)."""
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

        loop.add_reader(pidfd, exited)

    async def _pump(self, fd: int, stream: Stream) -> None:
        try:
            async for data in read_chunks(fd, self._limits.read_chunk_bytes):
                await self._queue.put(OutputChunk(stream, data))
        except OSError:
            pass  # a read error ends the stream like EOF
        finally:
            if fd != self._master_fd:
                os.close(fd)
        # Only on normal completion: a cancelled pump must not block in put().
        await self._queue.put(_EOF)

    async def output(self) -> AsyncIterator[OutputChunk]:
        """Yield chunks until every stream reached EOF."""
        while self._open_streams:
            item = await self._queue.get()
            if item is None:
                self._open_streams -= 1
                continue
            yield item

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
        await kill_group(
            self._popen.pid, self._limits.kill_grace_ms, self._limits.gone_timeout_ms
        )
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self.wait(), self._limits.gone_timeout_ms / 1000)
        await self._release()

    async def _release(self) -> None:
        # The group is dead, so the readers see EOF promptly; a grandchild that escaped the
        # group could still hold a pipe, hence the bounded drain.
        _done, pending = await asyncio.wait(self._tasks, timeout=self._limits.drain_ms / 1000)
        for task in pending:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, OSError):
                await task
        if pending:
            # Wake a consumer still waiting in output(): the abandoned streams are over.
            self._open_streams = 0
            with contextlib.suppress(asyncio.QueueFull):
                self._queue.put_nowait(_EOF)
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
    """Spawns processes on this host through the supervising shim."""

    def __init__(self, limits: ProcessLimits | None = None) -> None:
        self._limits = limits or ProcessLimits()
        self._live: set[LocalProcess] = set()

    @property
    def name(self) -> str:
        """Backend name."""
        return "local"

    async def start(self, request: SpawnRequest) -> ProcessHandle:
        """Spawn argv directly; raise SpawnError when nothing started."""
        if not request.argv:
            raise SpawnError("argv must not be empty", 0)
        status_r, status_w = os.pipe2(os.O_CLOEXEC)
        fds_to_close = [status_w]
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
                stdin_child: int = subprocess.DEVNULL
                if request.stdin_open:
                    stdin_child, stdin_parent = os.pipe2(os.O_CLOEXEC)
                    fds_to_close.append(stdin_child)
                out_r, out_w = os.pipe2(os.O_CLOEXEC)
                err_r, err_w = os.pipe2(os.O_CLOEXEC)
                fds_to_close += [out_w, err_w]
                out += [(out_r, Stream.STDOUT), (err_r, Stream.STDERR)]
                stdio = (stdin_child, out_w, err_w)
            argv = [sys.executable, "-I", "-S", _SHIM, str(status_w), str(os.getpid())]
            argv += ["1" if request.tty else "0", "--", request.argv[0]]
            argv += [request.arg0 or request.argv[0], *request.argv[1:]]
            try:
                # Forked from the loop thread: the shim's parent-death signal is tied to
                # this thread, which lives as long as the daemon.
                popen = subprocess.Popen(
                    argv,
                    stdin=stdio[0],
                    stdout=stdio[1],
                    stderr=stdio[2],
                    cwd=request.cwd,
                    env=dict(request.env),
                    pass_fds=(status_w,),
                    close_fds=True,
                )
            except OSError as exc:
                raise SpawnError(f"{exc.strerror}: {request.cwd!r}", exc.errno or 0) from exc
        except BaseException:
            for fd, _ in out:
                os.close(fd)
            os.close(status_r)
            if stdin_parent is not None:
                os.close(stdin_parent)
            raise
        finally:
            for fd in fds_to_close:
                os.close(fd)
        status = await self._read_status(status_r, popen)
        if not status.startswith(b"ok "):
            for fd, _ in out:
                os.close(fd)
            if stdin_parent is not None:
                os.close(stdin_parent)
            await asyncio.to_thread(popen.wait)
            detail = status[4:].decode(errors="replace") if status else "0 supervisor failed"
            number, _, text = detail.partition(" ")
            raise SpawnError(text, int(number) if number.isdigit() else 0)
        proc = LocalProcess(
            popen, int(status[3:]), out, stdin_parent, master, self._limits, self._live.discard
        )
        self._live.add(proc)
        return proc

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
        """Terminate every process started here."""
        live, self._live = list(self._live), set()
        await asyncio.gather(*(p.terminate() for p in live), return_exceptions=True)


__all__ = ["LocalBackend", "LocalProcess", "group_members"]
