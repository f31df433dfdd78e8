"""The exec-server under hostile load: memory after rejected huge requests, idle connections.

Not timed: each test asserts an end state within a generous bound (issue 14).
"""

from __future__ import annotations

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from shellgate.v1 import exec_pb2_grpc as pb_grpc

from tests.execserver_harness import daemon_subprocess, start_request
from tests.proc_scan import rss_bytes, wait_rss_below

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
