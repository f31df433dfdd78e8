"""Hostile requests stay bounded: Health answers meanwhile and every request ends cleanly.

Not timed: each test asserts that Health answers while the hostile requests are in flight
and that they end with a clean answer within a generous bound (issue 14).
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from shellgate.v1 import common_pb2, router_pb2, router_pb2_grpc

from tests.nofile import raise_own_nofile
from tests.proc_scan import rss_bytes, wait_rss_below
from tests.router_harness import router_subprocess, turn
from tests.waiting import eventually

# Generous: a loaded 2-core CI box; the point is "ends", not "is fast".
REQUEST_BOUND_S = 120.0
HEALTH_BOUND_S = 5.0
MIB = 1024 * 1024


@dataclass(frozen=True)
class Served:
    """A router in its own process: where it listens and a stub on it."""

    port: int
    stub: router_pb2_grpc.ToolRouterServiceStub


@pytest.fixture
def router(tmp_path: Path) -> Iterator[Served]:
    # Its own process, as in production: the client here builds and reads MiB messages, and
    # sharing the router's GIL with it made Health miss its bound on a loaded box.
    config = tmp_path / "router.toml"
    config.write_text(f"local_cwd = {json.dumps(str(tmp_path))}\n")
    with (
        router_subprocess(["--config", str(config)]) as (_proc, port),
        grpc.insecure_channel(f"127.0.0.1:{port}") as channel,
    ):
        yield Served(port, router_pb2_grpc.ToolRouterServiceStub(channel))


def _split(name: str, arguments: str) -> common_pb2.ToolCallItem:
    return common_pb2.ToolCallItem(
        split=common_pb2.SplitToolCall(name=name, call_id="c", arguments=arguments)
    )


def _project(item: common_pb2.ToolCallItem, tool: int) -> router_pb2.ProjectRequest:
    return router_pb2.ProjectRequest(thread_id="t", turn=turn(shell_tool=tool), item=item)


def _health(channel: grpc.Channel) -> int:
    stub = health_pb2_grpc.HealthStub(channel)
    reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=HEALTH_BOUND_S)
    return int(reply.status)


def _assert_health_during(
    router: Served, requests: Sequence[router_pb2.ProjectRequest]
) -> list[router_pb2.ProjectResponse]:
    """Send `requests` at once; probe Health until all have ended; every probe answers."""
    # Replies echo the script several times: a client of MiB scripts raises its receive limit.
    big = [("grpc.max_receive_message_length", 64 * MIB)]
    with (
        grpc.insecure_channel(f"127.0.0.1:{router.port}", options=big) as channel,
        grpc.insecure_channel(f"127.0.0.1:{router.port}") as probe_channel,
    ):
        stub = router_pb2_grpc.ToolRouterServiceStub(channel)
        futures = [stub.Project.future(r, timeout=REQUEST_BOUND_S) for r in requests]
        probes = 0
        # At least one probe, sent while the requests are (most likely) still in flight.
        while True:
            assert _health(probe_channel) == health_pb2.HealthCheckResponse.SERVING
            probes += 1
            if all(f.done() for f in futures):
                break
            time.sleep(0.05)
        assert probes >= 1
        return [f.result() for f in futures]


def _nul_arguments(key: str) -> str:
    # 3.4 MiB of request text, every character an escaped NUL (~580 000 NULs).
    count = (34 * MIB // 10) // 6
    nuls = "\\u0000" * count
    return f'{{"{key}":"{nuls}"}}'


@pytest.mark.parametrize(
    ("name", "key", "tool"),
    [
        ("exec_command", "cmd", common_pb2.MODEL_SHELL_TOOL_TYPE_UNIFIED_EXEC),
        ("shell_command", "command", common_pb2.MODEL_SHELL_TOOL_TYPE_SHELL_COMMAND),
    ],
)
def test_megabytes_of_nul_end_cleanly_while_health_answers(
    router: Served, name: str, key: str, tool: int
) -> None:
    [reply] = _assert_health_during(router, [_project(_split(name, _nul_arguments(key)), tool)])
    # Past the parse bounds the script is judged whole, as Codex judges an unparsable one.
    assert reply.projection.WhichOneof("outcome") == "shell"


def _one_line_script_request() -> router_pb2.ProjectRequest:
    # Just under max_item_bytes (4 MiB): ~838 000 commands on one line.
    script = "true;" * ((4 * MIB - 64) // 5)
    arguments = json.dumps({"cmd": script})
    return _project(
        _split("exec_command", arguments), common_pb2.MODEL_SHELL_TOOL_TYPE_UNIFIED_EXEC
    )


def test_a_four_mib_one_line_script_ends_cleanly_while_health_answers(router: Served) -> None:
    [reply] = _assert_health_during(router, [_one_line_script_request()])
    element = reply.projection.shell.elements[0]
    assert element.WhichOneof("element") == "command"


def test_eight_four_mib_scripts_at_once_end_cleanly_while_health_answers(
    router: Served,
) -> None:
    replies = _assert_health_during(router, [_one_line_script_request() for _ in range(8)])
    assert len(replies) == 8
    assert all(r.projection.WhichOneof("outcome") == "shell" for r in replies)
    # A tiny call still gets through afterwards.
    small = _project(
        _split("exec_command", '{"cmd":"echo hi"}'), common_pb2.MODEL_SHELL_TOOL_TYPE_UNIFIED_EXEC
    )
    assert router.stub.Project(small, timeout=30).projection.WhichOneof("outcome") == "shell"


@pytest.mark.parametrize(
    ("name", "key", "tool", "column"),
    [
        ("exec_command", "cmd", common_pb2.MODEL_SHELL_TOOL_TYPE_UNIFIED_EXEC, 11),
        ("shell_command", "command", common_pb2.MODEL_SHELL_TOOL_TYPE_SHELL_COMMAND, 15),
    ],
)
def test_a_lone_surrogate_is_a_tool_error_in_both_tools(
    router: Served, name: str, key: str, tool: int, column: int
) -> None:
    # The item verbatim: the outer JSON's `\ud800` escape puts a lone surrogate in
    # the arguments, which serde_json (a Rust `&str`) can never hold.
    arguments = f'{{\\"{key}\\":\\"\\ud800\\"}}'
    raw = f'{{"type":"function_call","name":"{name}","call_id":"c","arguments":"{arguments}"}}'
    request = _project(common_pb2.ToolCallItem(raw_json=raw), tool)
    reply = router.stub.Project(request, timeout=30)
    assert reply.projection.tool_error.text == (
        "failed to parse function arguments: unexpected end of hex escape "
        f"at line 1 column {column}"
    )
    execute = router_pb2.ExecuteRequest(thread_id="t", turn=request.turn, item=request.item)
    events = list(router.stub.Execute(execute, timeout=30))
    assert events and events[-1].WhichOneof("event") == "completed"


def test_idle_connections_past_nofile_leave_health_and_new_clients_working(
    tmp_path: Path,
) -> None:
    config = tmp_path / "router.toml"
    config.write_text("[connections]\nhandshake_timeout_ms = 1000\nmax_idle_ms = 2000\n")
    raise_own_nofile(1_500)
    idle: list[socket.socket] = []
    with router_subprocess(["--config", str(config)], nofile=1024) as (_proc, port):
        try:
            for _ in range(1_200):
                # Raw TCP, never a byte of HTTP/2: the connections a careless or hostile peer
                # leaves open. The kernel completes the handshake even when the daemon
                # closes or cannot accept them.
                idle.append(socket.create_connection(("127.0.0.1", port), timeout=5))
            with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                # Any answer ends the wait (a one-tuple: UNKNOWN is 0); an RpcError is "not yet".
                (status,) = eventually(
                    lambda: (_health(channel),),
                    "Health to answer",
                    60,
                    0.2,
                    ignoring=(grpc.RpcError,),
                )
                assert status == health_pb2.HealthCheckResponse.SERVING
            # A new client, with every idle connection still held on this side.
            with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub = router_pb2_grpc.ToolRouterServiceStub(channel)
                reply = stub.ListTools(router_pb2.ListToolsRequest(thread_id="t"), timeout=30)
                assert reply.tools
        finally:
            for sock in idle:
                sock.close()


def test_rejected_huge_items_leave_the_router_s_memory_where_it_was() -> None:
    # Each rejected 7 MiB item (under max_message_bytes, over max_item_bytes) used to keep
    # ~20 MiB alive: grpc.aio holds the last call's abort exception, whose frames held the
    # request, and glibc kept the freed receive buffers (memory_release.py).
    with (
        router_subprocess() as (proc, port),
        grpc.insecure_channel(f"127.0.0.1:{port}") as channel,
    ):
        stub = router_pb2_grpc.ToolRouterServiceStub(channel)
        stub.ListTools(router_pb2.ListToolsRequest(thread_id="t"), timeout=30)
        baseline = rss_bytes(proc.pid)
        arguments = json.dumps({"cmd": "x" * (7 * MIB)})
        request = _project(
            _split("exec_command", arguments), common_pb2.MODEL_SHELL_TOOL_TYPE_UNIFIED_EXEC
        )
        for _ in range(8):
            with pytest.raises(grpc.RpcError) as caught:
                stub.Project(request, timeout=REQUEST_BOUND_S)
            assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        bound = baseline + 64 * MIB
        rss = wait_rss_below(proc.pid, bound, within_s=30)
        assert rss < bound, f"RSS {rss // MIB} MiB, baseline {baseline // MIB} MiB"
        assert _health(channel) == health_pb2.HealthCheckResponse.SERVING
