"""Raw bytes that are not the method's protobuf message, sent to both daemons over a raw
channel (identity serializers): a clean INVALID_ARGUMENT, and the server keeps serving."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from hypothesis import given, settings
from hypothesis import strategies as st
from shellgate.client.errors import from_rpc_error
from shellgate.v1 import router_pb2

from tests.execserver_harness import Daemon, daemon_subprocess
from tests.fuzz.support import COUNTS, FUZZ
from tests.router_harness import Router, router_config, running_router

ROUTER_METHODS = (
    ("/shellgate.v1.ToolRouterService/Project", False),
    ("/shellgate.v1.ToolRouterService/Execute", True),
    ("/shellgate.v1.ToolRouterService/ListTools", False),
    ("/shellgate.v1.ToolRouterService/EndThread", False),
    ("/grpc.health.v1.Health/Check", False),
)
EXEC_METHODS = (
    ("/shellgate.v1.ExecService/Start", True),
    ("/shellgate.v1.ExecService/Read", False),
    ("/shellgate.v1.ExecService/Write", False),
    ("/grpc.health.v1.Health/Check", False),
)
# Bytes no protobuf parser accepts: bad tags, truncated varints and lengths, bad UTF-8.
NOT_PROTOBUF = (
    b"\xff\xff\xff\xff",
    b"\x0a\x03\xff\xfe\xfd",  # field 1 (a string in every request here) with invalid UTF-8
    b"\x12\x80",
    b"\x0a\x10abc",
    b"\x07",
    b"\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
    b"GET / HTTP/1.1\r\n\r\n",
)
NEVER = {grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL, grpc.StatusCode.DEADLINE_EXCEEDED}


def _call(channel: grpc.Channel, method: str, streaming: bool, payload: bytes) -> grpc.StatusCode:
    try:
        if streaming:
            for _ in channel.unary_stream(method)(payload, timeout=10):
                pass
        else:
            channel.unary_unary(method)(payload, timeout=10)
    except grpc.RpcError as exc:
        return exc.code()  # type: ignore[no-any-return]
    return grpc.StatusCode.OK


def _serving(channel: grpc.Channel) -> bool:
    reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
    return reply.status == health_pb2.HealthCheckResponse.SERVING


@pytest.fixture(scope="module")
def router() -> Iterator[Router]:
    with running_router(router_config()) as r:
        yield r


@pytest.mark.parametrize("payload", NOT_PROTOBUF)
@pytest.mark.parametrize(("method", "streaming"), ROUTER_METHODS)
def test_router_answers_invalid_argument_to_non_protobuf_bytes(
    router: Router, method: str, streaming: bool, payload: bytes
) -> None:
    assert _call(router.channel, method, streaming, payload) == grpc.StatusCode.INVALID_ARGUMENT
    COUNTS["raw"] += 1


@settings(FUZZ, max_examples=300)
@given(st.binary(max_size=512), st.sampled_from(ROUTER_METHODS))
def test_router_random_bytes_never_internal(
    router: Router, payload: bytes, method: tuple[str, bool]
) -> None:
    code = _call(router.channel, method[0], method[1], payload)
    assert code not in NEVER, (payload, method, code)
    COUNTS["raw"] += 1


def test_router_still_serves_after_garbage(router: Router) -> None:
    for payload in NOT_PROTOBUF:
        _call(router.channel, ROUTER_METHODS[0][0], False, payload)
    assert _serving(router.channel)
    tools = router.stub.ListTools(router_pb2.ListToolsRequest(thread_id="t"), timeout=10)
    assert tools.tools


@pytest.fixture(scope="module")
def daemon() -> Iterator[Daemon]:
    with daemon_subprocess(["--log-level", "WARNING"]) as d:
        yield d


@pytest.mark.parametrize(("method", "streaming"), EXEC_METHODS)
def test_daemon_answers_invalid_argument_to_non_protobuf_bytes(
    daemon: Daemon, method: str, streaming: bool
) -> None:
    with grpc.insecure_channel(daemon.target) as channel:
        codes = {_call(channel, method, streaming, p) for p in NOT_PROTOBUF}
    assert codes == {grpc.StatusCode.INVALID_ARGUMENT}, codes


@settings(FUZZ, max_examples=150)
@given(st.binary(max_size=512), st.sampled_from(EXEC_METHODS))
def test_daemon_random_bytes_never_unknown_or_internal(
    daemon: Daemon, payload: bytes, method: tuple[str, bool]
) -> None:
    with grpc.insecure_channel(daemon.target) as channel:
        code = _call(channel, method[0], method[1], payload)
    assert code not in NEVER, (payload, method, code)
    COUNTS["raw"] += 1


def test_daemon_never_echoes_the_parser_text(daemon: Daemon) -> None:
    read = "/shellgate.v1.ExecService/Read"
    with grpc.insecure_channel(daemon.target) as channel, pytest.raises(grpc.RpcError) as caught:
        channel.unary_unary(read)(b"\x0a\x03\xff\xfe\xfd", timeout=10)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert caught.value.details() == (
        "request is not a valid message for /shellgate.v1.ExecService/Read"
    )
    assert from_rpc_error(caught.value).reason == "invalid_argument"


def test_daemon_still_serves_after_garbage(daemon: Daemon) -> None:
    with grpc.insecure_channel(daemon.target) as channel:
        for method, streaming in EXEC_METHODS:
            for payload in NOT_PROTOBUF:
                code = _call(channel, method, streaming, payload)
                assert code == grpc.StatusCode.INVALID_ARGUMENT, (method, payload, code)
                COUNTS["raw"] += 1
        assert _serving(channel)
        assert daemon.proc.poll() is None
