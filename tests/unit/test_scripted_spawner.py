"""tests/scripted_spawner.py behaves like the processes it stands in for: output then exit,
gates the test opens, signals, stdin on pipes and ttys, spawn failures, every spawn recorded."""

from __future__ import annotations

import asyncio
import errno
import signal

import pytest
from shellgate.common.errors import NotATtyError, ProcessExitedError, StdinClosedError
from shellgate.common.process.base import ExitStatus, OutputChunk, Signal, SpawnRequest, Stream
from shellgate.common.sandbox import SandboxMode, SandboxSpec
from shellgate.router.runtime.environments.spawn import NO_SANDBOX, SpawnFailure

from tests.scripted_spawner import (
    Gate,
    Out,
    Script,
    ScriptedProcess,
    ScriptedSpawner,
    denied_in_sandbox,
    hangs,
    prints,
)


def _request(command: str, *, tty: bool = False, stdin_open: bool = False) -> SpawnRequest:
    return SpawnRequest(("/bin/bash", "-c", command), "/w", {}, tty=tty, stdin_open=stdin_open)


async def _start(spawner: ScriptedSpawner, request: SpawnRequest) -> ScriptedProcess:
    spawned = await spawner.spawn(request, NO_SANDBOX, detach=False, owner="test")
    assert isinstance(spawned.handle, ScriptedProcess) and not spawned.sandboxed
    assert spawned.process_id == str(spawned.handle.pid)
    return spawned.handle


async def _drain(proc: ScriptedProcess) -> list[OutputChunk]:
    return [chunk async for chunk in proc.output()]


def test_prints_then_exits_and_every_spawn_is_recorded() -> None:
    async def main() -> None:
        spawner = ScriptedSpawner({"echo hi": prints("hi\n", "oops\n", exit_code=3)})
        proc = await _start(spawner, _request("echo hi"))
        assert [(c.stream, c.data) for c in await _drain(proc)] == [
            (Stream.STDOUT, b"hi\n"),
            (Stream.STDERR, b"oops\n"),
        ]
        assert await proc.wait() == ExitStatus(code=3) and await proc.wait() == ExitStatus(code=3)
        assert spawner.commands == ["echo hi"] and spawner.spawned[0].owner == "test"
        assert proc.pid is not None and proc.pid > 4_194_304  # never a real pid
        with pytest.raises(AssertionError, match="unscripted command 'ls'"):
            await spawner.spawn(_request("ls"), NO_SANDBOX, detach=False, owner="test")

    asyncio.run(main())


def test_a_gate_holds_the_process_until_the_test_opens_it() -> None:
    async def main() -> None:
        gate = Gate()
        script = Script((Out(b"first\n"), gate, Out(b"second\n")), exit_code=0)
        proc = await _start(ScriptedSpawner(script), _request("x"))
        chunks = proc.output()
        assert (await anext(chunks)).data == b"first\n"
        await asyncio.wait_for(gate.reached.wait(), 5)
        assert not proc.exited
        gate.open()
        assert (await anext(chunks)).data == b"second\n"
        assert await proc.wait() == ExitStatus(code=0)

    asyncio.run(main())


def test_a_hanging_process_dies_of_its_signal_unless_it_ignores_it() -> None:
    async def main() -> None:
        spawner = ScriptedSpawner(
            {
                "sleep 30": hangs("up\n"),
                "trap": Script(hang=True, ignores=frozenset({Signal.TERMINATE})),
            }
        )
        proc = await _start(spawner, _request("sleep 30"))
        await proc.signal(Signal.INTERRUPT)
        assert await proc.wait() == ExitStatus(signal=signal.SIGINT)
        assert [c.data for c in await _drain(proc)] == [b"up\n"]
        with pytest.raises(ProcessExitedError):
            await proc.signal(Signal.KILL)
        stubborn = await _start(spawner, _request("trap"))
        await stubborn.signal(Signal.TERMINATE)
        assert not stubborn.exited
        await stubborn.terminate()  # TERM is ignored: KILL
        assert await stubborn.wait() == ExitStatus(signal=signal.SIGKILL)
        await spawner.aclose()

    asyncio.run(main())


def test_stdin_on_pipes_and_on_a_tty() -> None:
    async def main() -> None:
        cat = Script(hang=True, exits_on_eof=True, on_stdin=lambda data: [Out(data * 2)])
        spawner = ScriptedSpawner({"cat": cat, "sleep 30": hangs()})
        no_stdin = await _start(spawner, _request("sleep 30"))
        with pytest.raises(StdinClosedError):
            await no_stdin.write(b"x")
        with pytest.raises(NotATtyError):
            await no_stdin.resize(40, 100)
        await no_stdin.terminate()
        tty = await _start(spawner, _request("cat", tty=True))
        await tty.write(b"a")
        await tty.resize(40, 100)
        await tty.close_stdin()  # ^D
        assert await tty.wait() == ExitStatus(code=0)
        assert [c.data for c in await _drain(tty)] == [b"aa"]
        assert tty.stdin == b"a\x04" and tty.resizes == [(40, 100)]
        interrupted = await _start(spawner, _request("cat", tty=True))
        await interrupted.write(b"\x03")  # ^C on a tty is SIGINT
        assert await interrupted.wait() == ExitStatus(signal=signal.SIGINT)
        piped = await _start(spawner, _request("cat", stdin_open=True))
        await piped.close_stdin()
        assert await piped.wait() == ExitStatus(code=0)

    asyncio.run(main())


def test_spawn_failures_and_sandbox_dependent_scripts() -> None:
    async def main() -> None:
        spawner = ScriptedSpawner(
            {"true": Script(spawn_errno=errno.ENOENT), "touch x": denied_in_sandbox()}
        )
        with pytest.raises(SpawnFailure) as failed:
            await spawner.spawn(_request("true"), NO_SANDBOX, detach=False, owner="o")
        assert failed.value.errno == errno.ENOENT and spawner.processes == []
        sandbox = SandboxSpec(SandboxMode.READ_ONLY)
        spawned = await spawner.spawn(_request("touch x"), sandbox, detach=False, owner="o")
        assert spawned.sandboxed
        assert isinstance(spawned.handle, ScriptedProcess)
        assert b"Read-only file system" in b"".join(c.data for c in await _drain(spawned.handle))
        assert await spawned.handle.wait() == ExitStatus(code=1)
        free = await _start(spawner, _request("touch x"))
        assert await free.wait() == ExitStatus(code=0)
        assert spawner.commands == ["true", "touch x", "touch x"]

    asyncio.run(main())
