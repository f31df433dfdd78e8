"""The grpc-aio floor for `python -m bench`: a benchmark instrument, not a product.

One `grpc.aio.server` that does nothing but spawn the command and stream the same messages
the real servers send, so the bench can measure, in the same run and with the very same
clients, what any grpc-aio server in Python costs on top of the spawn (issue 21):

- `ExecService.Start`: `request.argv` with env exactly `request.env`, cwd `request.cwd`;
  events `started`, `output`… (512 KiB reads, like the daemon), `exited`, `closed`.
- `ToolRouterService.Execute`: `bash -c <command>` of a `shell_command` (or `exec_command`)
  call in the turn's first environment's cwd with this server's environment; events
  `projection`, `started`, `output`…, `completed` (exit code, `TERMINATION_REASON_EXITED`).
- `grpc.health.v1.Health` (the empty RPC).

Left out on purpose — everything that makes shellgate a product: authentication, the
decode guard, the projection pipeline (its `projection` carries only the call id, tool name
and payload kind; the router's also carries the envelope with the whole child environment),
policy, approvals, sandboxing, env policy, login shells, the call ledger and retries,
process tables, retained output, Attach/Read, sessions, timeouts, output truncation and
Codex's exact output formatting, metrics, audit and tracing. Only the generated
`shellgate.v1` modules are imported from the project.

    python -m bench.floor_server --listen 127.0.0.1:0 --print-port
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2_grpc
from shellgate.v1 import exec_pb2, exec_pb2_grpc, projection_pb2, router_pb2, router_pb2_grpc

READ_BYTES = 512 * 1024  # the daemon's read size
KEEP_BYTES = 32 * 1024  # head and tail of the output kept for the model's text
MESSAGE_BYTES = 80 * 1024 * 1024  # the daemon's default max_message_bytes
PIPE = asyncio.subprocess.PIPE
Stream = exec_pb2.OutputStream.ValueType


async def spawn(
    argv: Sequence[str], env: Mapping[str, str], cwd: str
) -> asyncio.subprocess.Process:
    """Start argv in its own session with piped stdout/stderr and no stdin (as the servers do)."""
    return await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.DEVNULL, stdout=PIPE, stderr=PIPE, env=dict(env),
        cwd=cwd or None, start_new_session=True,
    )  # fmt: skip


async def chunks(proc: asyncio.subprocess.Process) -> AsyncIterator[tuple[Stream, bytes]]:
    """(OutputStream, bytes) as they arrive on stdout and stderr, until both reach EOF."""
    queue: asyncio.Queue[tuple[Stream, bytes] | None] = asyncio.Queue()

    async def pump(reader: asyncio.StreamReader | None, stream: Stream) -> None:
        assert reader is not None
        while data := await reader.read(READ_BYTES):
            queue.put_nowait((stream, data))
        queue.put_nowait(None)

    pumps = [asyncio.create_task(pump(proc.stdout, exec_pb2.OUTPUT_STREAM_STDOUT)),
             asyncio.create_task(pump(proc.stderr, exec_pb2.OUTPUT_STREAM_STDERR))]  # fmt: skip
    try:
        open_streams = len(pumps)
        while open_streams:
            item = await queue.get()
            if item is None:
                open_streams -= 1
            else:
                yield item
    finally:
        for task in pumps:
            task.cancel()
        # A stream cancelled by its client must not leave its command running.
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)


def _kept(total: int, head: bytes, tail: bytes) -> bytes:
    """The output as the model sees it here: whole when short, else head + marker + tail."""
    if total <= KEEP_BYTES:
        return head
    return head + b"\n[... output truncated ...]\n" + tail


def _exit_status(returncode: int) -> exec_pb2.ExitStatus:
    # asyncio reports death by signal N as -N.
    if returncode < 0:
        return exec_pb2.ExitStatus(signal=-returncode)
    return exec_pb2.ExitStatus(code=returncode)


def _event(**kind: Any) -> exec_pb2.StartResponse:
    return exec_pb2.StartResponse(event=exec_pb2.ProcessEvent(**kind))


class FloorExec(exec_pb2_grpc.ExecServiceServicer):
    """ExecService.Start only: spawn, then started, output…, exited, closed."""

    async def Start(self, request: Any, context: Any) -> AsyncIterator[exec_pb2.StartResponse]:
        """Stream one process's events, seq counted per process like the daemon."""
        try:
            proc = await spawn(request.argv, request.env, request.cwd)
        except OSError as exc:
            failed = exec_pb2.SpawnFailed(errno=exc.errno or 0, message=exc.strerror or str(exc))
            yield _event(spawn_failed=failed)
            return
        yield _event(started=exec_pb2.ProcessStarted(process_id=str(proc.pid), pid=proc.pid))
        seq = offset = 0
        async for stream, data in chunks(proc):
            seq, offset = seq + 1, offset + len(data)
            chunk = exec_pb2.OutputChunk(seq=seq, stream=stream, data=data, end_offset=offset)
            yield _event(output=chunk)
        status = _exit_status(await proc.wait())
        yield _event(exited=exec_pb2.ProcessExited(seq=seq + 1, status=status))
        yield _event(closed=exec_pb2.ProcessClosed(seq=seq + 2))


class FloorRouter(router_pb2_grpc.ToolRouterServiceServicer):
    """ToolRouterService.Execute only: projection, started, output…, completed."""

    async def Execute(
        self, request: Any, context: Any
    ) -> AsyncIterator[router_pb2.ExecuteResponse]:
        """Run the call's command with `bash -c`, formatting the output minimally."""
        t0 = time.monotonic()
        item = json.loads(request.item.raw_json)
        args = json.loads(item["arguments"])
        command = args.get("command", args.get("cmd"))
        env = request.turn.environments[0] if request.turn.environments else None
        projection = projection_pb2.Projection(
            call_id=item["call_id"], tool_name=item["name"],
            payload_kind=projection_pb2.PAYLOAD_KIND_FUNCTION,
        )  # fmt: skip
        yield router_pb2.ExecuteResponse(projection=projection)
        proc = await spawn(["bash", "-c", command], os.environ, env.cwd if env else "")
        started = router_pb2.ExecutionStarted(
            environment_id=env.environment_id if env else "local", process_id=str(proc.pid),
            pid=proc.pid,
        )  # fmt: skip
        yield router_pb2.ExecuteResponse(started=started)
        # The model's text keeps a head and a tail (as the router's token budget does), never
        # the whole output: 64 MiB in one `completed` message would exceed the message limit.
        seq, total, head, tail = 0, 0, b"", b""
        async for stream, data in chunks(proc):
            seq, total = seq + 1, total + len(data)
            if len(head) < KEEP_BYTES:
                head += data[: KEEP_BYTES - len(head)]
            tail = (tail + data[-KEEP_BYTES:])[-KEEP_BYTES:]
            chunk = router_pb2.ExecutionOutput(stream=stream, seq=seq, data=data)
            yield router_pb2.ExecuteResponse(output=chunk)
        code = await proc.wait()
        wall = time.monotonic() - t0
        text = (f"Exit code: {code}\nWall time: {wall:.1f} seconds\nOutput:\n"
                f"{_kept(total, head, tail).decode(errors='replace')}")  # fmt: skip
        out_item = {"type": "function_call_output", "call_id": item["call_id"], "output": text}
        yield router_pb2.ExecuteResponse(completed=router_pb2.ExecutionCompleted(
            output_item_json=json.dumps(out_item), output_text=text, success=code == 0,
            exit_code=code, wall_time_ms=int(wall * 1000),
            termination=router_pb2.TERMINATION_REASON_EXITED,
        ))  # fmt: skip


async def serve(listen: str, print_port: bool) -> None:
    """Serve until SIGTERM/SIGINT; print the bound port first when asked (procs.serve)."""
    server = grpc.aio.server(options=[("grpc.max_receive_message_length", MESSAGE_BYTES),
                                      ("grpc.max_send_message_length", MESSAGE_BYTES)])  # fmt: skip
    exec_pb2_grpc.add_ExecServiceServicer_to_server(FloorExec(), server)
    router_pb2_grpc.add_ToolRouterServiceServicer_to_server(FloorRouter(), server)
    health_pb2_grpc.add_HealthServicer_to_server(health.aio.HealthServicer(), server)
    port = server.add_insecure_port(listen)
    await server.start()
    if print_port:
        print(port, flush=True)
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(signum, stop.set)
    await stop.wait()
    # Cancelling the open streams kills their commands (see chunks).
    await server.stop(0)


def main(argv: Sequence[str] | None = None) -> None:
    """`--listen HOST:PORT [--print-port]`."""
    parser = argparse.ArgumentParser(prog="python -m bench.floor_server", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--listen", default="127.0.0.1:0", help="loopback address to bind")
    parser.add_argument("--print-port", action="store_true", help="print the bound port")
    args = parser.parse_args(argv)
    asyncio.run(serve(args.listen, args.print_port))


if __name__ == "__main__":
    main()
