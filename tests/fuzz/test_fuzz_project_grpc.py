"""`Project` over real gRPC against one in-process router: OK with a projection or a tool
error, INVALID_ARGUMENT for malformed requests; never INTERNAL/UNKNOWN, never a hang."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from hypothesis import given, settings
from hypothesis import strategies as st
from shellgate.router.pipeline import project
from shellgate.router.projection import (
    ApplyPatchToolCall,
    NoToolCallOutcome,
    ShellCall,
    ToolErrorOutcome,
    WriteStdinCall,
)
from shellgate.router.service.config import Limits
from shellgate.v1 import common_pb2, router_pb2, router_pb2_grpc

from tests.fuzz.strategies import megabyte_items, output_item
from tests.fuzz.support import (
    COUNTS,
    FUZZ,
    MEGABYTE_ITEM_S,
    PER_ITEM_S,
    SHELL_TOOLS,
    host,
    timed,
    turns,
)
from tests.router_harness import Router, router_config, running_router

ITEMS_PER_EXAMPLE = 4
_KIND = {
    ShellCall: "shell",
    ToolErrorOutcome: "tool_error",
    NoToolCallOutcome: "no_tool_call",
    ApplyPatchToolCall: "apply_patch",
    WriteStdinCall: "write_stdin",
}
CWD = "/fuzz-cwd"
PURE_TURNS = dict(zip(SHELL_TOOLS, turns(CWD), strict=True))
PURE_HOST = host()


@pytest.fixture(scope="module")
def router() -> Iterator[Router]:
    # No rules: the same empty policy the pure side uses, so the answers can be compared.
    config = router_config(local_cwd=CWD, limits=Limits(shutdown_grace_ms=500))
    with running_router(config) as r:
        yield r


def _request(item: str, tool: int) -> router_pb2.ProjectRequest:
    return router_pb2.ProjectRequest(
        thread_id="fuzz",
        turn=common_pb2.TurnContext(
            environments=[common_pb2.TurnEnvironment(environment_id="local", cwd=CWD)],
            shell_tool_type=tool,
        ),
        item=common_pb2.ToolCallItem(raw_json=item),
    )


def _check_against_core(item: str, tool: int, reply: router_pb2.ProjectResponse) -> None:
    expected = project(item, PURE_TURNS[tool], PURE_HOST)
    projection = reply.projection
    assert projection.WhichOneof("outcome") == _KIND[type(expected.outcome)], item[:200]
    if isinstance(expected.outcome, ToolErrorOutcome):
        assert projection.tool_error.text == expected.outcome.text
    if isinstance(expected.outcome, ShellCall):
        assert len(projection.shell.elements) == len(expected.outcome.elements)


@settings(FUZZ, max_examples=600)
@given(
    st.lists(
        st.tuples(output_item(), st.sampled_from(SHELL_TOOLS)),
        min_size=ITEMS_PER_EXAMPLE,
        max_size=ITEMS_PER_EXAMPLE,
    )
)
def test_project_over_grpc_never_fails_internally(
    router: Router, batch: list[tuple[str, int]]
) -> None:
    # The batch goes out concurrently, as a harness would send it.
    futures = [
        (item, tool, router.stub.Project.future(_request(item, tool), timeout=PER_ITEM_S))
        for item, tool in batch
    ]
    for item, tool, future in futures:
        reply = timed("grpc.items", future.result)
        _check_against_core(item, tool, reply)


def test_megabyte_items_over_grpc(router: Router) -> None:
    # A projection echoes the script several times: the client raises its receive limit
    # to the router's send limit (docs/reliability.md).
    limit = router.running.app.config.limits.max_send_message_bytes
    options = [("grpc.max_receive_message_length", limit)]
    with grpc.insecure_channel(f"127.0.0.1:{router.port}", options=options) as channel:
        stub = router_pb2_grpc.ToolRouterServiceStub(channel)
        for item in megabyte_items():
            reply = timed(
                "grpc.megabyte",
                lambda item=item: stub.Project(
                    _request(item, SHELL_TOOLS[0]), timeout=MEGABYTE_ITEM_S
                ),
                MEGABYTE_ITEM_S,
            )
            assert reply.projection.WhichOneof("outcome")
    assert COUNTS["grpc.megabyte"] == len(megabyte_items())


def test_out_of_limit_items_are_rejected_and_server_keeps_serving(router: Router) -> None:
    limit = router.running.app.config.limits.max_item_bytes
    too_big = '{"type":"message","content":"' + "a" * limit + '"}'
    with pytest.raises(grpc.RpcError) as err:
        router.stub.Project(_request(too_big, SHELL_TOOLS[0]), timeout=PER_ITEM_S)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "item.raw_json" in (err.value.details() or "")
    # Past the transport's message limit gRPC itself answers RESOURCE_EXHAUSTED.
    huge = "a" * (router.running.app.config.limits.max_message_bytes + 1)
    with pytest.raises(grpc.RpcError) as err:
        router.stub.Project(_request(huge, SHELL_TOOLS[0]), timeout=PER_ITEM_S)
    assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    health = health_pb2_grpc.HealthStub(router.channel)
    assert health.Check(health_pb2.HealthCheckRequest(), timeout=5).status == (
        health_pb2.HealthCheckResponse.SERVING
    )


@pytest.mark.parametrize(
    "field",
    ["thread_id", "split_name", "split_call_id", "environments", "environment_id"],
)
def test_malformed_requests_are_invalid_argument(router: Router, field: str) -> None:
    request = _request('{"type":"message"}', SHELL_TOOLS[0])
    if field == "thread_id":
        request.thread_id = "x" * 129
    elif field == "split_name":
        request.item.split.name = "n" * 10_000
    elif field == "split_call_id":
        request.item.split.call_id = "c" * 10_000
    elif field == "environments":
        request.turn.ClearField("environments")
        for i in range(1_000):
            request.turn.environments.add(environment_id=f"e{i}")
    else:
        request.turn.environments[0].environment_id = "\x00bad"
    with pytest.raises(grpc.RpcError) as err:
        router.stub.Project(request, timeout=PER_ITEM_S)
    assert err.value.code() in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND), (
        err.value.code(),
        err.value.details(),
    )
