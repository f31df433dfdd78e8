"""ExecService against a real in-process daemon on 127.0.0.1:0: processes over gRPC."""

from __future__ import annotations

import asyncio
import itertools
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
import pytest
from shellgate.v1 import exec_pb2 as pb
from shellgate.v1 import shell_pb2 as shell_pb

from tests.execserver_harness import (
    collect,
    daemon_config,
    exec_stub,
    in_process_daemon,
    output_of,
    start_request,
)
from tests.waiting import eventually_async

Body = Callable[[Any], Awaitable[None]]


def run(body: Body, **config: Any) -> None:
    """Run body(stub) against a fresh in-process daemon."""

    async def main() -> None:
        async with (
            in_process_daemon(daemon_config(**config)) as daemon,
            exec_stub(f"127.0.0.1:{daemon.port}") as stub,
        ):
            await asyncio.wait_for(body(stub), 40)

    asyncio.run(main())


async def start_detached(stub: Any, argv: list[str], **fields: Any) -> str:
    """Start a detached process and return its id (the Start stream is then dropped)."""
    call = stub.Start(start_request(argv, detach=True, **fields))
    first = await call.read()
    call.cancel()
    assert first.event.WhichOneof("event") == "started"
    return str(first.event.started.process_id)


async def read_until_closed(stub: Any, pid: str) -> tuple[bytes, Any]:
    """Read everything until closed; return (bytes, last reply)."""
    after, data = 0, b""
    while True:
        reply = await stub.Read(pb.ReadRequest(process_id=pid, after_seq=after, wait_ms=2_000))
        data += b"".join(c.data for c in reply.chunks)
        after = reply.next_seq - 1
        if reply.closed:
            return data, reply


def test_get_info_reports_native_shell_and_capabilities() -> None:
    async def body(stub: Any) -> None:
        info = await stub.GetInfo(pb.GetInfoRequest())
        assert info.HasField("shell") and os.path.isabs(info.shell.path)
        assert info.shell.type != shell_pb.SHELL_TYPE_UNSPECIFIED
        assert info.backend == pb.EXEC_BACKEND_LOCAL and info.caller == "local"
        assert info.capabilities.pty and info.limits.retained_output_bytes == 1024 * 1024

    run(body)


def test_pipes_and_pty_exit_codes_and_seq_order() -> None:
    async def body(stub: Any) -> None:
        events = await collect(stub.Start(start_request(["sh", "-c", "[ -t 1 ] || echo pipe; exit 4"])))
        kinds = [e.WhichOneof("event") for e in events]
        assert kinds == ["started", "output", "exited", "closed"]
        assert [events[1].output.seq, events[2].exited.seq, events[3].closed.seq] == [1, 2, 3]
        assert output_of(events) == b"pipe\n" and events[2].exited.status.code == 4
        events = await collect(stub.Start(start_request(["sh", "-c", "[ -t 1 ] && echo tty"], tty=True)))
        assert output_of(events) == b"tty\r\n"
        assert events[1].output.stream == pb.OUTPUT_STREAM_PTY

    run(body)


def test_a_coalesced_start_sends_a_short_command_in_one_message() -> None:
    async def body(stub: Any) -> None:
        argv = ["sh", "-c", "echo one; exit 4"]
        plain = [m async for m in stub.Start(start_request(argv))]
        # Generous window: the whole command fits in it even on a loaded machine.
        joined = [m async for m in stub.Start(start_request(argv, coalesce_ms=1000))]
        assert [len(m.more) for m in plain] == [0, 0, 0, 0]
        assert len(joined) == 1
        events = [joined[0].event, *joined[0].more]
        kinds = [e.WhichOneof("event") for e in events]
        assert kinds == [m.event.WhichOneof("event") for m in plain]
        assert kinds == ["started", "output", "exited", "closed"]
        assert output_of(events) == b"one\n" and events[2].exited.status.code == 4
        assert [events[1].output.seq, events[2].exited.seq, events[3].closed.seq] == [1, 2, 3]
        # A longer command: what the window held leaves when it expires, the rest after.
        slow = ["sh", "-c", "echo first; sleep 0.5; echo second"]
        parts = [m async for m in stub.Start(start_request(slow, coalesce_ms=50))]
        assert len(parts) >= 2
        first = [parts[0].event.WhichOneof("event"), *(e.WhichOneof("event") for e in parts[0].more)]
        assert first[0] == "started" and "closed" not in first
        assert output_of([e for m in parts for e in (m.event, *m.more)]) == b"first\nsecond\n"

    run(body)


def test_stdin_signal_resize_and_ctrl_c() -> None:
    async def body(stub: Any) -> None:
        pid = await start_detached(stub, ["sh", "-c", "cat; echo bye"], stdin_open=True)
        await stub.Write(pb.WriteRequest(process_id=pid, data=b"abc\n"))
        await stub.CloseStdin(pb.CloseStdinRequest(process_id=pid))
        data, last = await read_until_closed(stub, pid)
        assert data == b"abc\nbye\n" and last.exit_status.code == 0
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.Write(pb.WriteRequest(process_id=pid, data=b"x"))
        assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION

        pid = await start_detached(stub, ["sleep", "30"])
        await stub.Signal(pb.SignalRequest(process_id=pid, signal=pb.PROCESS_SIGNAL_TERMINATE))
        _, last = await read_until_closed(stub, pid)
        assert last.exit_status.signal == 15

        script = "stty size; sleep 1; stty size; read x"
        pid = await start_detached(stub, ["sh", "-c", script], tty=True, rows=20, cols=70)
        await asyncio.sleep(0.4)
        await stub.Resize(pb.ResizeRequest(process_id=pid, rows=33, cols=99))
        await asyncio.sleep(1.0)
        await stub.Write(pb.WriteRequest(process_id=pid, data=b"\x03"))
        data, last = await read_until_closed(stub, pid)
        assert b"20 70" in data and b"33 99" in data
        assert last.exit_status.signal == 2 or last.exit_status.code == 130

    run(body)


def test_attach_after_disconnect_loses_and_duplicates_nothing() -> None:
    async def body(stub: Any) -> None:
        script = "i=0; while [ $i -lt 40 ]; do echo line$i; i=$((i+1)); sleep 0.02; done"
        call = stub.Start(start_request(["sh", "-c", script], detach=True))
        seen: list[Any] = []
        async for message in call:
            seen.append(message.event)
            if len(seen) == 6:
                break
        call.cancel()
        last = max(e.output.seq for e in seen if e.WhichOneof("event") == "output")
        pid = seen[0].started.process_id
        rest = await collect(stub.Attach(pb.AttachRequest(process_id=pid, after_seq=last)))
        outputs = [e for e in seen + rest if e.WhichOneof("event") == "output"]
        seqs = [e.output.seq for e in outputs]
        assert seqs == list(range(1, len(seqs) + 1))
        expected = "".join(f"line{i}\n" for i in range(40)).encode()
        assert b"".join(e.output.data for e in outputs) == expected
        assert rest[-1].WhichOneof("event") == "closed"

    run(body)


def test_read_selection_and_long_poll() -> None:
    async def body(stub: Any) -> None:
        pid = await start_detached(stub, ["sh", "-c", "read x; echo $x"], stdin_open=True)
        empty = await stub.Read(pb.ReadRequest(process_id=pid, after_seq=0, wait_ms=300))
        assert list(empty.chunks) == [] and empty.next_seq == 1 and not empty.exited
        waiter = asyncio.ensure_future(
            stub.Read(pb.ReadRequest(process_id=pid, after_seq=0, wait_ms=10_000))
        )
        await asyncio.sleep(0.2)
        await stub.Write(pb.WriteRequest(process_id=pid, data=b"woke\n"))
        reply = await waiter
        assert reply.chunks[0].data == b"woke\n" and reply.next_seq == 2

    run(body)


def test_idempotent_start_and_ownership_and_limits() -> None:
    async def body(stub: Any) -> None:
        first = await stub.Start(start_request(["sleep", "5"], detach=True, request_id="k1")).read()
        second = await stub.Start(start_request(["sleep", "5"], detach=True, request_id="k1")).read()
        assert second.event.started.process_id == first.event.started.process_id
        assert second.event.started.reused
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.Start(start_request(["sleep", "5"], detach=True)).read()
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.Read(pb.ReadRequest(process_id="nope"))
        assert err.value.code() == grpc.StatusCode.NOT_FOUND
        listed = await stub.List(pb.ListRequest())
        assert [p.process_id for p in listed.processes] == [first.event.started.process_id]
        term = await stub.Terminate(pb.TerminateRequest(process_id=first.event.started.process_id))
        assert term.running

    run(body, max_processes_per_caller=1)


def test_refusals_spawn_failure_and_sandbox() -> None:
    async def body(stub: Any) -> None:
        async def code_of(request: pb.StartRequest) -> grpc.StatusCode:
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await collect(stub.Start(request))
            return err.value.code()

        assert await code_of(start_request([])) == grpc.StatusCode.INVALID_ARGUMENT
        zsh_fork = start_request(["true"], shell_mode=shell_pb.SHELL_MODE_ZSH_FORK)
        assert await code_of(zsh_fork) == grpc.StatusCode.FAILED_PRECONDITION
        cmd = start_request(["true"], shell_type=shell_pb.SHELL_TYPE_CMD)
        assert await code_of(cmd) == grpc.StatusCode.FAILED_PRECONDITION
        events = await collect(stub.Start(start_request(["/no/such/program"])))
        assert events[0].spawn_failed.errno == 2
        info = await stub.GetInfo(pb.GetInfoRequest())
        if not info.capabilities.sandbox:
            pytest.skip(info.capabilities.sandbox_unavailable_reason)
        ro = shell_pb.SandboxRequest(mode=shell_pb.SANDBOX_MODE_READ_ONLY)
        script = 'echo $CODEX_SANDBOX_NETWORK_DISABLED; touch /tmp/sg-ro-probe-$$ 2>&1; exit 0'
        events = await collect(stub.Start(start_request(["sh", "-c", script], sandbox=ro)))
        assert events[0].started.sandboxed
        text = output_of(events)
        assert text.startswith(b"1\n") and b"Read-only file system" in text

    run(body)


def test_file_operations_are_atomic_and_report_os_errors(tmp_path: Any) -> None:
    async def body(stub: Any) -> None:
        target = str(tmp_path / "sub" / "f.txt")
        await stub.WriteFile(pb.WriteFileRequest(path=target, data=b"one", create_parents=True))
        assert (await stub.ReadFile(pb.ReadFileRequest(path=target))).data == b"one"
        st = await stub.Stat(pb.StatRequest(path=target, follow_symlinks=True))
        assert st.exists and st.kind == pb.FILE_KIND_FILE and st.size == 3
        moved = str(tmp_path / "g.txt")
        await stub.Rename(pb.RenameRequest(from_path=target, to_path=moved))
        await stub.Remove(pb.RemoveRequest(path=moved))
        assert not (await stub.Stat(pb.StatRequest(path=moved))).exists
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.ReadFile(pb.ReadFileRequest(path=moved))
        assert err.value.code() == grpc.StatusCode.NOT_FOUND
        assert err.value.details() == "No such file or directory (os error 2)"
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.ReadFile(pb.ReadFileRequest(path="relative"))
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert sorted(os.listdir(tmp_path)) == ["sub"]

    run(body)


def test_list_reports_awaiting_input() -> None:
    async def body(stub: Any) -> None:
        pid = await start_detached(stub, ["sh", "-c", "read x"], stdin_open=True)
        async def awaiting_input() -> bool:
            listed = await stub.List(pb.ListRequest())
            return listed.processes[0].state == pb.PROCESS_STATE_AWAITING_INPUT

        await eventually_async(awaiting_input, "the process listed as awaiting input", 5, 0.1)
        await stub.Terminate(pb.TerminateRequest(process_id=pid))

    run(body)


def test_idle_probe_backs_off_and_input_resets_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from shellgate.execserver import follow

    probes: list[float] = []
    real_probe = follow.is_awaiting_input

    def spy(pgid: int) -> bool:
        probes.append(time.monotonic())
        return real_probe(pgid)

    monkeypatch.setattr(follow, "is_awaiting_input", spy)
    monkeypatch.setattr(follow, "IDLE_PROBE_MS", 50)
    monkeypatch.setattr(follow, "IDLE_PROBE_MAX_MS", 800)

    async def wait_probes(count: int) -> None:
        await eventually_async(
            lambda: len(probes) >= count, f"{count} idle probes", 5, 0.01
        )

    async def body(stub: Any) -> None:
        call = stub.Start(start_request(["sleep", "30"], stdin_open=True))
        first = await call.read()
        assert first.event.WhichOneof("event") == "started"
        await wait_probes(5)  # at ~0.05, 0.15, 0.35, 0.75, 1.55 s: "no" each time
        gaps = [b - a for a, b in itertools.pairwise(probes)]
        assert gaps[3] >= 0.7, gaps  # doubled three times (0.1 → 0.8), not a steady 0.05
        await stub.Write(pb.WriteRequest(process_id=first.event.started.process_id, data=b"x"))
        written_at = time.monotonic()
        # Without the reset the next probe would come 0.8 s after the last one; with it,
        # ~0.05 s after the write: 0.4 s is 8x that and still half the un-reset gap.
        await wait_probes(6)
        assert probes[5] - written_at < 0.4, probes[5] - written_at
        call.cancel()

    run(body)
