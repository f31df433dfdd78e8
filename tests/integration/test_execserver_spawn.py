"""The spawn fast paths keep their answers on real processes: O(1) per-caller counts, cancelled
starts, arg0, pipe growth, a program gone after the check (the cached PATH lookup itself:
tests/unit/test_spawn_path_cache.py)."""

from __future__ import annotations

import asyncio
import errno
import os
from pathlib import Path

import pytest
from shellgate.common.errors import LimitExceededError, SpawnError
from shellgate.common.process.base import SpawnRequest
from shellgate.common.process.launch import check_spawnable
from shellgate.common.process.local import LocalBackend
from shellgate.execserver.config import ProcessLimits
from shellgate.execserver.process_table import ProcessTable, StartSpec, TableLimits

from tests.waiting import eventually_async


def _request(program: str, path: str, cwd: str = "/") -> SpawnRequest:
    return SpawnRequest((program,), cwd, {"PATH": path})


def _errno(request: SpawnRequest) -> int:
    with pytest.raises(SpawnError) as err:
        check_spawnable(request)
    return err.value.errno


def test_per_caller_counts_follow_starts_evictions_and_removals() -> None:
    env = dict(os.environ)

    def spec(caller: str) -> StartSpec:
        return StartSpec(caller, "o", SpawnRequest(("true",), "/tmp", env), False, None, None,
                         None, False)  # fmt: skip

    async def main() -> None:
        limits = TableLimits(max_processes_per_caller=2, max_processes_total=5)
        table = ProcessTable(LocalBackend(ProcessLimits(kill_grace_ms=200)), limits)
        try:
            procs = [(await table.start(spec(c)))[0] for c in ("a", "a", "b")]
            for proc in procs:
                await proc.handle.wait()
            await eventually_async(
                lambda: all(p.closed for p in procs),
                "the processes' output closed",
                interval_s=0.01,
            )
            # "a" is at its cap with two closed processes: the oldest makes room.
            third, _ = await table.start(spec("a"))
            assert [p.process_id for p in table.list("a")] == [
                procs[1].process_id,
                third.process_id,
            ]
            assert table._count("a") == 2 and table._count("b") == 1
            await table.remove(third.process_id)
            assert table._count("a") == 1
            await table.remove(procs[2].process_id)
            assert table._count("b") == 0 and "b" not in table._by_caller
            # Running processes still count: the cap holds.
            running = [(await table.start(StartSpec(
                "c", "o", SpawnRequest(("sleep", "5"), "/tmp", env), False, None, None, None,
                False)))[0] for _ in range(2)]  # fmt: skip
            with pytest.raises(LimitExceededError):
                await table.start(spec("c"))
            assert len(running) == 2
        finally:
            await table.shutdown()
        assert table._by_caller == {}

    asyncio.run(main())


def _open_fds() -> set[int]:
    return {int(fd) for fd in os.listdir("/proc/self/fd")}


def test_a_start_cancelled_while_spawning_kills_what_it_started(orphan_sweep: str) -> None:
    # Popen runs on a spawner thread; a Start cancelled meanwhile must not leave the child
    # running unowned, nor leak the pipes.
    from tests.conftest import marked_pids

    async def main() -> None:
        backend = LocalBackend()
        request = SpawnRequest(("sleep", "30"), "/tmp", dict(os.environ), stdin_open=True)
        # With commands running, spawns go to the spawner threads (a lone one runs inline).
        busy = [await backend.start(request) for _ in range(2)]
        warm = await backend.start(request)  # the spawner threads exist from here
        await warm.terminate()
        before = _open_fds()
        for _ in range(5):
            task = asyncio.create_task(backend.start(request))
            await asyncio.sleep(0)  # it is now waiting on the spawner thread
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        await eventually_async(
            lambda: len(marked_pids(orphan_sweep)) == len(busy) and _open_fds() == before,
            "only the busy commands left, and no fd leaked",
            timeout_s=5,
        )
        assert sorted(marked_pids(orphan_sweep)) == sorted(p.pid for p in busy if p.pid)
        assert _open_fds() == before
        await backend.aclose()
        assert marked_pids(orphan_sweep) == []

    asyncio.run(main())


def test_arg0_on_pipes_is_what_the_program_sees(tmp_path: Path) -> None:
    async def main() -> bytes:
        backend = LocalBackend()
        request = SpawnRequest(("sh", "-c", 'printf "%s" "$0"'), str(tmp_path),
                               dict(os.environ), arg0="custom-zero")  # fmt: skip
        proc = await backend.start(request)
        data = b"".join([chunk.data async for chunk in proc.output()])
        await proc.wait()
        await backend.aclose()
        return data

    assert asyncio.run(main()) == b"custom-zero"


def test_only_a_pipe_that_fills_up_is_grown(tmp_path: Path) -> None:
    import fcntl

    from shellgate.common.process.base import Stream

    def pipe_sizes(proc: object) -> dict[Stream, int]:
        fds = proc._output._open  # type: ignore[attr-defined]
        return {stream: fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ) for fd, stream in fds.items()}

    async def main() -> tuple[dict[Stream, int], dict[Stream, int]]:
        backend = LocalBackend(ProcessLimits(pipe_buffer_bytes=262_144))
        env = dict(os.environ)
        quiet = await backend.start(SpawnRequest(("sh", "-c", "echo hi; sleep 2"), "/tmp", env))
        chunks = quiet.output()
        assert (await anext(chunks)).data == b"hi\n"
        quiet_sizes = pipe_sizes(quiet)
        loud = await backend.start(
            SpawnRequest(("sh", "-c", "head -c 300000 /dev/zero; sleep 2"), "/tmp", env)
        )
        got = 0
        loud_chunks = loud.output()
        while got < 300_000:
            got += len((await anext(loud_chunks)).data)
        loud_sizes = pipe_sizes(loud)
        await backend.aclose()
        return quiet_sizes, loud_sizes

    quiet_sizes, loud_sizes = asyncio.run(main())
    assert quiet_sizes == {Stream.STDOUT: 65_536, Stream.STDERR: 65_536}
    assert loud_sizes == {Stream.STDOUT: 262_144, Stream.STDERR: 65_536}


def test_a_program_gone_after_the_check_is_named_in_the_spawn_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # check_spawnable passes, then the program disappears before Popen runs it: the error
    # names the program (as the pre-check would), not the working directory.
    tool = tmp_path / "sg-vanishing"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)

    def check_then_remove(request: SpawnRequest) -> None:
        check_spawnable(request)
        tool.unlink()

    # The check runs where the spawn pins the approved cwd (cwd_pin), right before Popen.
    monkeypatch.setattr("shellgate.common.process.cwd_pin.check_spawnable", check_then_remove)

    async def main() -> SpawnError:
        backend = LocalBackend()
        try:
            with pytest.raises(SpawnError) as err:
                await backend.start(SpawnRequest((str(tool),), str(tmp_path), {}))
            return err.value
        finally:
            await backend.aclose()

    error = asyncio.run(main())
    assert error.errno == errno.ENOENT
    assert error.message == f"No such file or directory: {str(tool)!r}"
