"""The exec-server under hostile load: memory after rejected huge requests, idle connections.

Not timed: each test asserts an end state within a generous bound (issue 14).
"""

from __future__ import annotations

import socket
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from shellgate.v1 import exec_pb2_grpc as pb_grpc

from tests.execserver_harness import daemon_subprocess, start_request
from tests.nofile import raise_own_nofile
from tests.proc_scan import rss_bytes, wait_rss_below
from tests.waiting import eventually

MIB = 1024 * 1024


def _health(channel: grpc.Channel) -> int:
    reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
    return int(reply.status)


def test_rejected_huge_starts_leave_the_daemon_s_memory_where_it_was() -> None:
    # A 60 MiB argv (under max_message_bytes, over max_argv_bytes) used to keep ~240 MiB
    # per rejected Start: grpc.aio holds the last call's abort exception, whose frames held
    # the request, and glibc kept the freed receive buffers (memory_release.py).
    with daemon_subprocess() as daemon:
        options = [("grpc.max_send_message_length", 128 * MIB)]
        with grpc.insecure_channel(daemon.target, options=options) as channel:
            assert _health(channel) == health_pb2.HealthCheckResponse.SERVING
            baseline = rss_bytes(daemon.proc.pid)
            stub = pb_grpc.ExecServiceStub(channel)
            request = start_request(["echo", "x" * (60 * MIB)])
            for _ in range(3):
                with pytest.raises(grpc.RpcError) as caught:
                    list(stub.Start(request, timeout=120))
                assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
                assert "max_argv_bytes" in (caught.value.details() or "")
            bound = baseline + 64 * MIB
            rss = wait_rss_below(daemon.proc.pid, bound, within_s=30)
            assert rss < bound, f"RSS {rss // MIB} MiB, baseline {baseline // MIB} MiB"
            assert _health(channel) == health_pb2.HealthCheckResponse.SERVING


def test_idle_connections_past_nofile_leave_health_and_new_clients_working(
    tmp_path: Path,
) -> None:
    config = tmp_path / "execserver.toml"
    config.write_text("[connections]\nhandshake_timeout_ms = 1000\nmax_idle_ms = 2000\n")
    raise_own_nofile(1_500)
    idle: list[socket.socket] = []
    with daemon_subprocess(["--config", str(config)], nofile=1024) as daemon:
        try:
            for _ in range(1_200):
                # Raw TCP, never a byte of HTTP/2; the kernel completes the handshake even
                # when the daemon closes or cannot accept them.
                idle.append(socket.create_connection(("127.0.0.1", daemon.port), timeout=5))
            with grpc.insecure_channel(daemon.target) as channel:
                # Any answer ends the wait (a one-tuple: UNKNOWN is 0); an RpcError is "not yet".
                (status,) = eventually(
                    lambda: (_health(channel),),
                    "Health to answer",
                    60,
                    0.2,
                    ignoring=(grpc.RpcError,),
                )
                assert status == health_pb2.HealthCheckResponse.SERVING
            # A new client runs a command, with every idle connection still held here.
            with grpc.insecure_channel(daemon.target) as channel:
                stub = pb_grpc.ExecServiceStub(channel)
                events = [m.event for m in stub.Start(start_request(["echo", "hi"]), timeout=30)]
                assert b"".join(e.output.data for e in events if e.HasField("output")) == b"hi\n"
        finally:
            for sock in idle:
                sock.close()
