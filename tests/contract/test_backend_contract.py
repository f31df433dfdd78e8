"""Backend conformance: the same behavioural tests against every process backend."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from shellgate.common.errors import ProcessExitedError, SpawnError
from shellgate.common.process.base import Backend, ExitStatus, Signal, SpawnRequest
from shellgate.common.process.local import LocalBackend
from shellgate.execserver.config import ProcessLimits

from tests.conftest import marked_pids
from tests.sshd import sshd_server  # noqa: F401  (session fixture)

LIMITS = ProcessLimits(kill_grace_ms=500, drain_ms=1_000)
Factory = Callable[[], Awaitable[Backend]]


@pytest.fixture(params=["local", "ssh"])
def make_backend(request: pytest.FixtureRequest) -> Factory:
    """A factory for each backend (SSH skips when no sshd can run here)."""
    if request.param == "local":

        async def local() -> Backend:
            return LocalBackend(LIMITS)

        return local
    from tests.sshd import ssh_backend_factory

    return ssh_backend_factory(request, LIMITS)


def run(factory: Factory, body: Callable[[Backend], Awaitable[None]]) -> None:
    """Run body against a fresh backend, closing it afterwards."""

    async def main() -> None:
        backend = await factory()
        try:
            await asyncio.wait_for(body(backend), 30)
        finally:
            await backend.aclose()

    asyncio.run(main())


def req(script: str, **kw: Any) -> SpawnRequest:
    """A `sh -c script` request inheriting this environment (with the test marker)."""
    return SpawnRequest(("sh", "-c", script), "/tmp", dict(os.environ), **kw)


async def drain(output: AsyncIterator[Any]) -> bytes:
    """All output bytes."""
    return b"".join([c.data async for c in output])


def test_pipes_are_not_a_tty_and_streams_are_separate(make_backend: Factory) -> None:
    async def body(b: Backend) -> None:
        p = await b.start(req("[ -t 1 ] || echo notty; echo err >&2; exit 7"))
        chunks = [c async for c in p.output()]
        out = b"".join(c.data for c in chunks if c.stream.value == "stdout")
        err = b"".join(c.data for c in chunks if c.stream.value == "stderr")
        assert (out, err) == (b"notty\n", b"err\n")
        assert await p.wait() == ExitStatus(code=7)
        await p.terminate()

    run(make_backend, body)


def test_pty_is_a_tty_with_size_and_resize(make_backend: Factory) -> None:
    async def body(b: Backend) -> None:
        p = await b.start(
            req("[ -t 1 ] && echo istty; stty size; read x; stty size", tty=True, rows=30, cols=90)
        )
        await asyncio.sleep(0.3)
        await p.resize(40, 120)
        await p.write(b"go\n")
        text = await drain(p.output())
        assert b"istty" in text and b"30 90" in text and b"40 120" in text
        assert (await p.wait()).code == 0
        await p.terminate()

    run(make_backend, body)


def test_stdin_write_and_eof(make_backend: Factory) -> None:
    async def body(b: Backend) -> None:
        p = await b.start(req("cat; echo done", stdin_open=True))
        await p.write(b"hello\n")
        await p.close_stdin()
        assert await drain(p.output()) == b"hello\ndone\n"
        assert (await p.wait()).code == 0
        await p.terminate()

    run(make_backend, body)


def test_stdin_closed_unless_asked(make_backend: Factory) -> None:
    async def body(b: Backend) -> None:
        p = await b.start(req("cat; echo eof"))
        assert await drain(p.output()) == b"eof\n"
        await p.terminate()

    run(make_backend, body)


def test_interrupt_reaches_the_group(make_backend: Factory) -> None:
    async def body(b: Backend) -> None:
        p = await b.start(req("sleep 30"))
        await asyncio.sleep(0.3)
        await p.signal(Signal.INTERRUPT)
        status = await p.wait()
        assert status.signal == signal.SIGINT or status.code == 130
        with pytest.raises(ProcessExitedError):
            await p.signal(Signal.INTERRUPT)
        await p.terminate()

    run(make_backend, body)


def test_ctrl_c_on_a_pty_interrupts_the_foreground_group(make_backend: Factory) -> None:
    async def body(b: Backend) -> None:
        p = await b.start(req("sleep 30", tty=True))
        await asyncio.sleep(0.3)
        await p.write(b"\x03")
        status = await asyncio.wait_for(p.wait(), 10)
        assert status.signal == signal.SIGINT or status.code == 130
        await p.terminate()

    run(make_backend, body)


@pytest.mark.allow_orphans
def test_terminate_kills_term_ignoring_child_and_grandchild_holding_stdout(
    make_backend: Factory, orphan_sweep: str
) -> None:
    async def body(b: Backend) -> None:
        p = await b.start(req("trap '' TERM; (trap '' TERM; sleep 60) & sleep 60; echo never"))
        await asyncio.sleep(0.3)
        assert len(marked_pids(orphan_sweep)) >= 2
        started = time.monotonic()
        await p.terminate()
        assert time.monotonic() - started < 10
        assert (await p.wait()).code != 0 or (await p.wait()).signal is not None
        assert marked_pids(orphan_sweep) == []

    run(make_backend, body)


def test_spawn_failure_is_an_error(make_backend: Factory) -> None:
    async def body(b: Backend) -> None:
        with pytest.raises(SpawnError):
            await b.start(SpawnRequest(("/nonexistent/prog",), "/tmp", dict(os.environ)))

    run(make_backend, body)


def test_env_is_exactly_the_request_env(make_backend: Factory) -> None:
    async def body(b: Backend) -> None:
        env = dict(os.environ)
        env["SG_ODD"] = "a b'$(x)\"\n"
        p = await b.start(SpawnRequest(("sh", "-c", 'printf %s "$SG_ODD"'), "/tmp", env))
        assert await drain(p.output()) == b"a b'$(x)\"\n"
        await p.terminate()

    run(make_backend, body)


def test_a_consumer_that_stops_reading_holds_the_process_back(make_backend: Factory) -> None:
    size = 32 * 1024 * 1024

    async def body(backend: Backend) -> None:
        handle = await backend.start(req(f"head -c {size} /dev/zero"))
        output = handle.output()
        got = len((await anext(output)).data)
        exit_task = asyncio.ensure_future(handle.wait())
        await asyncio.sleep(1.0)
        # Every buffer between the process and us (pipe, SSH window, the backend's bounded
        # queue) is far smaller than the output: unread, it cannot run to its end.
        assert not exit_task.done()
        async for chunk in output:
            got += len(chunk.data)
        assert got == size
        assert (await exit_task).code == 0

    run(make_backend, body)
