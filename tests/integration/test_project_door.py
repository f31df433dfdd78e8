"""The Project door (`project_listen`): the main port's answers byte for byte, answered
while the router's event loop is held, the main port's authentication and TLS, fixed errors
for bad requests, nothing but Project served, and rules reloads seen at once."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import trustme
from shellgate.common.grpc.connections import ConnectionLimits
from shellgate.router.service.config import ConfigError
from shellgate.v1 import common_pb2, router_pb2, router_pb2_grpc

from tests.integration.shared_support import free_port
from tests.router_harness import (
    Router,
    function_item,
    router_config,
    router_subprocess,
    running_router,
    turn,
)
from tests.waiting import eventually

PROJECT = "/shellgate.v1.ToolRouterService/Project"
TOKEN = "alice-5f0e9c1d7b2a44"
PATCH = "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n"
ITEMS = {
    "exec_command": function_item("exec_command", {"cmd": "rg -n TODO src"}),
    "shell_command": function_item("shell_command", {"command": "git status && rm -rf build"}),
    "apply_patch": function_item("apply_patch", {"input": PATCH}),
    "unknown tool": function_item("frobnicate", {}),
    "bad arguments": function_item("exec_command", "{not json"),
    "not an item": common_pb2.ToolCallItem(raw_json="[1, 2"),
}


def _rules(folder: Path, decision: str) -> Path:
    folder.mkdir(exist_ok=True)
    (folder / "default.rules").write_text(
        f'prefix_rule(pattern=["git", "status"], decision="{decision}")\n'
    )
    return folder


@pytest.fixture
def door(tmp_path: Path) -> Iterator[Router]:
    config = router_config(
        project_listen="127.0.0.1:0", local_cwd=str(tmp_path),
        rules_dirs=(str(_rules(tmp_path / "rules", "allow")),),
    )  # fmt: skip
    with running_router(config) as router:
        yield router


def _door_port(router: Router) -> int:
    door = router.running.project_door
    assert door is not None
    return door.port


def _raw(channel: grpc.Channel, request: bytes, **kwargs: object) -> bytes:
    call = channel.unary_unary(PROJECT, request_serializer=None, response_deserializer=None)
    answer: bytes = call(request, timeout=10, **kwargs)
    return answer


def _request(item: common_pb2.ToolCallItem, thread_id: str = "t1") -> bytes:
    request = router_pb2.ProjectRequest(thread_id=thread_id, turn=turn(), item=item)
    return request.SerializeToString()


def test_the_door_answers_what_the_main_port_answers_byte_for_byte(door: Router) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{_door_port(door)}") as channel:
        for name, item in ITEMS.items():
            # Twice: the first goes through the loop (a turn not converted yet), the second
            # is the worker's own answer (kept, or projected there).
            for thread_id in ("fresh", "fresh"):
                main = _raw(door.channel, _request(item, thread_id))
                assert _raw(channel, _request(item, thread_id)) == main, name
        answer = router_pb2.ProjectResponse.FromString(_raw(channel, _request(ITEMS["exec_command"])))
        assert answer.projection.call_id == "c1"
        assert answer.projection.WhichOneof("outcome") == "shell"
        assert "rg -n TODO src" in str(answer.projection.shell)


def test_a_held_event_loop_does_not_delay_the_door(door: Router) -> None:
    request = _request(ITEMS["shell_command"])
    small = _request(function_item("exec_command", {"cmd": "ls -la"}))
    with grpc.insecure_channel(f"127.0.0.1:{_door_port(door)}") as channel:
        expected = _raw(channel, request)
        release = threading.Event()
        held = threading.Event()

        def hold() -> None:  # runs on the router's loop: nothing else runs there meanwhile
            held.set()
            release.wait(30)

        door.loop.call_soon_threadsafe(hold)
        assert held.wait(10)
        try:
            # A kept answer, and one the worker projects itself (same turn, a new item):
            # neither needs the loop, so both come back while it is held.
            assert _raw(channel, request) == expected
            projected_there = _raw(channel, small)
            # A turn the router has not converted yet needs the loop: it waits for it.
            other = channel.unary_unary(PROJECT, request_serializer=None,
                                        response_deserializer=None).future(
                _request(ITEMS["exec_command"], "never-seen"), timeout=20)  # fmt: skip
            assert not other.done()
        finally:
            release.set()
        assert router_pb2.ProjectResponse.FromString(other.result()).projection.call_id == "c1"
        assert projected_there == _raw(door.channel, small)


def test_a_rules_reload_is_seen_by_the_door_at_once(door: Router, tmp_path: Path) -> None:
    request = _request(function_item("exec_command", {"cmd": "git status"}))
    with grpc.insecure_channel(f"127.0.0.1:{_door_port(door)}") as channel:
        before = _raw(channel, request)
        assert _raw(channel, request) == before  # kept now
        assert b"forbidden" not in before
        _rules(tmp_path / "rules", "forbidden")
        door.call(door.running.app.reload_rules())
        after = _raw(channel, request)
        assert after != before
        assert after == _raw(door.channel, request)
        assert _raw(channel, request) == after


def test_bad_requests_get_fixed_errors_and_other_methods_are_not_served(door: Router) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{_door_port(door)}") as channel:
        with pytest.raises(grpc.RpcError) as bad:
            _raw(channel, b"\xff\xff\xff\x7fsecret-bytes")
        assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert bad.value.details() == f"request is not a valid message for {PROJECT}"
        big = function_item("exec_command", {"cmd": "x" * 2_000_000})
        with pytest.raises(grpc.RpcError) as large:
            _raw(channel, _request(big))
        with pytest.raises(grpc.RpcError) as large_main:
            _raw(door.channel, _request(big))
        assert large.value.code() == large_main.value.code()
        assert large.value.details() == large_main.value.details()
        with pytest.raises(grpc.RpcError) as thread:
            _raw(channel, _request(ITEMS["exec_command"], thread_id="bad id with spaces\n"))
        with pytest.raises(grpc.RpcError) as thread_main:
            _raw(door.channel, _request(ITEMS["exec_command"], thread_id="bad id with spaces\n"))
        assert (thread.value.code(), thread.value.details()) == (
            thread_main.value.code(), thread_main.value.details())  # fmt: skip
        stub = router_pb2_grpc.ToolRouterServiceStub(channel)
        with pytest.raises(grpc.RpcError) as other:
            stub.ListTools(router_pb2.ListToolsRequest(thread_id="t"), timeout=10)
        assert other.value.code() == grpc.StatusCode.UNIMPLEMENTED
        with pytest.raises(grpc.RpcError) as execute:
            list(stub.Execute(router_pb2.ExecuteRequest(
                thread_id="t", turn=turn(), item=function_item("exec_command", {"cmd": "true"})
            ), timeout=10))  # fmt: skip
        assert execute.value.code() == grpc.StatusCode.UNIMPLEMENTED


def test_the_door_authenticates_as_the_main_port_does(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice {TOKEN}\nbob bob-99aa00ccddee11\n")
    config = router_config(
        project_listen="127.0.0.1:0", token_file=str(tokens), local_cwd=str(tmp_path),
        client_environments=(("bob", ("elsewhere",)),),
    )  # fmt: skip
    request = _request(ITEMS["exec_command"])
    with running_router(config) as router, grpc.insecure_channel(
        f"127.0.0.1:{_door_port(router)}"
    ) as channel:
        for metadata in ((), (("authorization", "Bearer wrong-token-123456"),),
                         (("authorization", "bob-99aa00ccddee11"),),
                         (("authorization", "Bearer bob-99aa00ccddee11"),)):  # fmt: skip
            outcomes = []
            for target in (channel, router.channel):
                with pytest.raises(grpc.RpcError) as refused:
                    _raw(target, request, metadata=metadata)
                outcomes.append((refused.value.code(), refused.value.details()))
            assert outcomes[0] == outcomes[1], metadata
            assert outcomes[0][0] in (grpc.StatusCode.UNAUTHENTICATED,
                                      grpc.StatusCode.PERMISSION_DENIED)  # fmt: skip
        alice = (("authorization", f"Bearer {TOKEN}"),)
        assert _raw(channel, request, metadata=alice) == _raw(
            router.channel, request, metadata=alice
        )


def test_the_door_uses_the_main_ports_tls(tmp_path: Path) -> None:
    ca = trustme.CA()
    leaf = ca.issue_cert("127.0.0.1")
    cert, key = tmp_path / "server.pem", tmp_path / "server.key"
    leaf.cert_chain_pems[0].write_to_path(str(cert))
    leaf.private_key_pem.write_to_path(str(key))
    config = router_config(project_listen="127.0.0.1:0", tls_cert_file=str(cert),
                           tls_key_file=str(key), local_cwd=str(tmp_path))  # fmt: skip
    with running_router(config) as router:
        target = f"127.0.0.1:{_door_port(router)}"
        creds = grpc.ssl_channel_credentials(ca.cert_pem.bytes())
        with grpc.secure_channel(target, creds) as channel:
            answer = router_pb2.ProjectResponse.FromString(_raw(channel, _request(ITEMS["exec_command"])))
            assert answer.projection.call_id == "c1"
        with grpc.insecure_channel(target) as plain, pytest.raises(grpc.RpcError) as refused:
            call = plain.unary_unary(PROJECT, request_serializer=None, response_deserializer=None)
            call(_request(ITEMS["exec_command"]), timeout=3)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE


def test_the_door_closes_with_the_router(tmp_path: Path) -> None:
    config = router_config(project_listen="127.0.0.1:0", local_cwd=str(tmp_path))
    with running_router(config) as router:
        port = _door_port(router)
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            assert _raw(channel, _request(ITEMS["exec_command"]))
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel, pytest.raises(grpc.RpcError) as gone:
        call = channel.unary_unary(PROJECT, request_serializer=None, response_deserializer=None)
        call(_request(ITEMS["exec_command"]), timeout=3)
    assert gone.value.code() == grpc.StatusCode.UNAVAILABLE


@pytest.mark.parametrize(
    ("address", "text"),
    [
        ("0.0.0.0:7000", "address is not loopback"),
        ("127.0.0.1:70000", "port 0-65535"),
        ("127.0.0.1:7001", "uses the main listener's port"),
    ],
)
def test_project_listen_is_refused_where_it_would_be_unsafe(address: str, text: str) -> None:
    config = router_config(listen="127.0.0.1:7001", project_listen=address)
    with pytest.raises(ConfigError) as refused:
        config.validate()
    assert "project_listen" in str(refused.value)
    assert text in str(refused.value)
    # Plaintext off loopback is the operator's explicit choice, as on the main port.
    if address.startswith("0.0.0.0"):
        router_config(listen="127.0.0.1:7001", project_listen=address, insecure=True).validate()


def test_calls_past_the_peer_limit_are_refused_and_the_rest_answered(tmp_path: Path) -> None:
    config = router_config(project_listen="127.0.0.1:0", local_cwd=str(tmp_path),
                           connections=ConnectionLimits(max_calls_per_peer=2))  # fmt: skip
    with running_router(config) as router, grpc.insecure_channel(
        f"127.0.0.1:{_door_port(router)}"
    ) as channel:
        call = channel.unary_unary(PROJECT, request_serializer=None, response_deserializer=None)
        release, held = threading.Event(), threading.Event()

        def hold() -> None:
            held.set()
            release.wait(30)

        router.loop.call_soon_threadsafe(hold)
        assert held.wait(10)
        try:
            # New threads need the loop: two wait for it, the third is one too many.
            waiting = [call.future(_request(ITEMS["exec_command"], f"w{i}"), timeout=20)
                       for i in range(2)]  # fmt: skip
            door = router.running.project_door
            assert door is not None
            eventually(lambda: door.in_flight == 2, "two calls waiting for the loop")
            with pytest.raises(grpc.RpcError) as refused:
                call(_request(ITEMS["exec_command"], "w2"), timeout=10)
        finally:
            release.set()
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "connections.max_calls_per_peer" in (refused.value.details() or "")
        for future in waiting:
            assert router_pb2.ProjectResponse.FromString(future.result()).projection.call_id
        assert _raw(channel, _request(ITEMS["exec_command"], "w2"))


def test_shellgate_serve_opens_the_door_with_its_flag() -> None:
    port = free_port()
    with router_subprocess(["--project-listen", f"127.0.0.1:{port}"]) as (_proc, main_port):
        request = _request(ITEMS["exec_command"])
        with grpc.insecure_channel(f"127.0.0.1:{port}") as door_channel, \
                grpc.insecure_channel(f"127.0.0.1:{main_port}") as main_channel:  # fmt: skip
            assert _raw(door_channel, request) == _raw(main_channel, request)
