"""Every RPC of both services with hostile field values, from concurrent callers (issue 14).

The requests are built from the services' descriptors, so a new RPC or field is fuzzed
without a change here: every field may get a hostile value of its type (huge, empty, NUL,
control and bidi characters, deep JSON nesting, negative and extreme integers, unknown
enum values, NaN), and string fields may also be sent as raw bytes that are not UTF-8
(a lone surrogate, CESU-encoded), which protobuf Python cannot build. Each example sends a
batch at once from several threads. Every call must end with a status that is not
UNKNOWN, INTERNAL or DEADLINE_EXCEEDED, and Health must answer after each batch.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor, ServiceDescriptor
from google.protobuf.message_factory import GetMessageClass
from grpc_health.v1 import health_pb2, health_pb2_grpc
from hypothesis import given, settings
from hypothesis import strategies as st
from shellgate.v1 import common_pb2, exec_pb2, router_pb2

from tests.execserver_harness import Daemon, daemon_subprocess
from tests.fuzz.support import COUNTS, FUZZ, SHELL_TOOLS
from tests.router_harness import Router, router_config, running_router, turn

MIB = 1024 * 1024
NEVER = {grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL, grpc.StatusCode.DEADLINE_EXCEEDED}
CALL_TIMEOUT_S = 60.0
CALLERS = 4
ROUTER_SERVICE = router_pb2.DESCRIPTOR.services_by_name["ToolRouterService"]
EXEC_SERVICE = exec_pb2.DESCRIPTOR.services_by_name["ExecService"]
# Over the router's max_item_bytes (4 MiB) but under its message limit; over every
# exec-server field limit (1 MiB) but far under its message limit.
ROUTER_HUGE = 4 * MIB + 1
EXEC_HUGE = MIB + 1

DEEP = 100_000


def _item(name: str, arguments: str) -> str:
    # A function_call item whose arguments string is `arguments` (escaped as JSON text).
    escaped = arguments.replace("\\", "\\\\").replace('"', '\\"')
    return f'{{"type":"function_call","name":"{name}","call_id":"c","arguments":"{escaped}"}}'


# Hostile strings: none is an absolute path or a program name, so nothing runs or is
# touched outside the test's directories (file paths come from `_paths`).
STRINGS: tuple[str, ...] = (
    "",
    "\x00",
    "\x00" * 4096,
    "x" * 65_536,
    "\u202e\u200b\ufeff\x1b[2J\r\n\t",
    "é" * 10_000,
    "\U0001f600" * 1000,
    "[" * DEEP,
    '{"a":' * DEEP,
    "$(" * 10_000,
    "true;" * 20_000,
    _item("exec_command", '{"cmd":"' + "\\u0000" * 10_000 + '"}'),
    _item("shell_command", '{"command":"' + "[" * 10_000 + '"}'),
    _item("exec_command", '{"cmd":"\\ud800"}'),
    _item("exec_command", "[" * DEEP),
    '{"type":"function_call","name":"' + "n" * 65_536 + '","arguments":"{}"}',
    '{"type":"local_shell_call","action":{"type":"exec","command":[' + "[" * 1000 + "]}}",
)
# Not UTF-8: a lone surrogate (CESU-8), a truncated sequence, an overlong NUL, a bare 0xff.
INVALID_UTF8: tuple[bytes, ...] = (b"\xed\xa0\x80", b"\xe2\x82", b"\xc0\x80", b"x\xffy")
BYTES: tuple[bytes, ...] = (b"", b"\x00" * 1024, b"\xff" * 65_536)
INTS: dict[int, tuple[int, ...]] = {
    FieldDescriptor.CPPTYPE_INT32: (-(2**31), -1, 0, 1, 2**31 - 1),
    FieldDescriptor.CPPTYPE_UINT32: (0, 1, 2**32 - 1),
    FieldDescriptor.CPPTYPE_INT64: (-(2**63), -1, 0, 2**63 - 1),
    FieldDescriptor.CPPTYPE_UINT64: (0, 1, 2**64 - 1),
    FieldDescriptor.CPPTYPE_ENUM: (0, 1, 7, 999, -5),
}
FLOATS = (math.nan, math.inf, -math.inf, -1e308, 0.0)


def _scalar(field: FieldDescriptor, paths: tuple[str, ...]) -> st.SearchStrategy[Any]:
    kind = field.cpp_type
    if kind == FieldDescriptor.CPPTYPE_STRING:
        if field.type == FieldDescriptor.TYPE_BYTES:
            return st.sampled_from(BYTES)
        return st.sampled_from(STRINGS + paths)
    if kind == FieldDescriptor.CPPTYPE_BOOL:
        return st.booleans()
    if kind in (FieldDescriptor.CPPTYPE_DOUBLE, FieldDescriptor.CPPTYPE_FLOAT):
        return st.sampled_from(FLOATS)
    return st.sampled_from(INTS[kind])


def _is_map(field: FieldDescriptor) -> bool:
    return bool(field.message_type is not None and field.message_type.GetOptions().map_entry)


@st.composite
def _message(draw: Any, descriptor: Descriptor, paths: tuple[str, ...], depth: int = 0) -> Any:
    """A message of `descriptor` with a random subset of fields set to hostile values."""
    message = GetMessageClass(descriptor)()
    chosen_oneofs: set[str] = set()
    for field in descriptor.fields:
        if not draw(st.booleans()):
            continue
        oneof = field.containing_oneof
        if oneof is not None and not oneof.name.startswith("_"):
            if oneof.name in chosen_oneofs:
                continue
            chosen_oneofs.add(oneof.name)
        target = getattr(message, field.name)
        if _is_map(field):
            key_field, value_field = field.message_type.fields
            if value_field.message_type is None:
                for _ in range(draw(st.sampled_from((1, 3)))):
                    key = draw(_scalar(key_field, paths))
                    target[key] = draw(_scalar(value_field, paths))
        elif field.message_type is not None:
            if depth >= 3:
                continue
            count = draw(st.sampled_from((1, 3))) if _repeated(field) else 1
            for _ in range(count):
                sub = draw(_message(field.message_type, paths, depth + 1))
                if _repeated(field):
                    target.add().CopyFrom(sub)
                else:
                    target.CopyFrom(sub)
        elif _repeated(field):
            value = draw(_scalar(field, paths))
            target.extend([value] * draw(st.sampled_from((1, 2, 64))))
        else:
            setattr(message, field.name, draw(_scalar(field, paths)))
    return message


def _repeated(field: FieldDescriptor) -> bool:
    return bool(field.is_repeated)


def _string_fields(descriptor: Descriptor) -> list[FieldDescriptor]:
    return [
        f for f in descriptor.fields if f.type == FieldDescriptor.TYPE_STRING and not _repeated(f)
    ]


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _with_invalid_utf8(payload: bytes, field: FieldDescriptor, text: bytes) -> bytes:
    """`payload` with string `field` (appended, so it wins) set to bytes that are not UTF-8."""
    return payload + _varint(field.number << 3 | 2) + _varint(len(text)) + text


@st.composite
def _call(draw: Any, service: ServiceDescriptor, paths: tuple[str, ...]) -> tuple[str, bool, bytes]:
    """(method path, server-streaming, request bytes) for a random method of `service`."""
    method = draw(st.sampled_from(list(service.methods)))
    payload = draw(_message(method.input_type, paths)).SerializeToString()
    strings = _string_fields(method.input_type)
    if strings and draw(st.integers(0, 3)) == 0:
        field = draw(st.sampled_from(strings))
        payload = _with_invalid_utf8(payload, field, draw(st.sampled_from(INVALID_UTF8)))
    path = f"/{service.full_name}/{method.name}"
    return path, bool(method.server_streaming), payload


@st.composite
def _router_item_call(draw: Any) -> tuple[str, bool, bytes]:
    """Project or Execute with a valid thread and turn and a hostile item (or resume)."""
    tool = draw(st.sampled_from(SHELL_TOOLS))
    text = draw(st.sampled_from(STRINGS))
    item = draw(
        st.sampled_from(
            (
                common_pb2.ToolCallItem(raw_json=text),
                common_pb2.ToolCallItem(
                    split=common_pb2.SplitToolCall(name="exec_command", call_id="c", arguments=text)
                ),
                common_pb2.ToolCallItem(
                    split=common_pb2.SplitToolCall(
                        name="shell_command", call_id="c", arguments=text
                    )
                ),
            )
        )
    )
    wire_turn = turn(shell_tool=tool)
    if draw(st.booleans()):
        request = router_pb2.ProjectRequest(thread_id="fuzz", turn=wire_turn, item=item)
        return "/shellgate.v1.ToolRouterService/Project", False, request.SerializeToString()
    execute = router_pb2.ExecuteRequest(thread_id="fuzz", turn=wire_turn)
    if draw(st.integers(0, 3)) == 0:
        execute.resume.approval_id = text
        execute.resume.decision = draw(st.sampled_from(INTS[FieldDescriptor.CPPTYPE_ENUM]))
    else:
        execute.item.CopyFrom(item)
    return "/shellgate.v1.ToolRouterService/Execute", True, execute.SerializeToString()


def _send(channel: grpc.Channel, method: str, streaming: bool, payload: bytes) -> grpc.StatusCode:
    # Identity serializers: the bytes go out as built (invalid UTF-8 included).
    try:
        if streaming:
            for _ in channel.unary_stream(method)(payload, timeout=CALL_TIMEOUT_S):
                pass
        else:
            channel.unary_unary(method)(payload, timeout=CALL_TIMEOUT_S)
    except grpc.RpcError as exc:
        return exc.code()  # type: ignore[no-any-return]
    return grpc.StatusCode.OK


def _batch(
    pool: ThreadPoolExecutor, channel: grpc.Channel, calls: list[tuple[str, bool, bytes]]
) -> None:
    """Send `calls` at once; each ends cleanly and Health answers afterwards."""
    codes = list(pool.map(lambda call: _send(channel, *call), calls))
    for call, code in zip(calls, codes, strict=True):
        assert code not in NEVER, (call[0], call[2][:200], code)
    reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
    assert reply.status == health_pb2.HealthCheckResponse.SERVING
    COUNTS["rpc"] += len(calls)
    SENT.update(call[0] for call in calls)


def _huge_calls(service: ServiceDescriptor, size: int) -> Iterator[tuple[str, bool, bytes]]:
    """One request per method with every singular string field `size` characters long."""
    for method in service.methods:
        message = GetMessageClass(method.input_type)()
        for field in _string_fields(method.input_type):
            if field.containing_oneof is None or field.containing_oneof.name.startswith("_"):
                setattr(message, field.name, "x" * size)
        yield (
            f"/{service.full_name}/{method.name}",
            bool(method.server_streaming),
            (message.SerializeToString()),
        )


@pytest.fixture(scope="module")
def pool() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(CALLERS) as executor:
        yield executor


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz-rpc")


@pytest.fixture(scope="module")
def router(workdir: Path) -> Iterator[Router]:
    with running_router(router_config(local_cwd=str(workdir))) as r:
        yield r


@pytest.fixture(scope="module")
def daemon(workdir: Path) -> Iterator[Daemon]:
    with daemon_subprocess(["--log-level", "WARNING", "--root", str(workdir)]) as d:
        yield d


def _paths(workdir: Path) -> tuple[str, ...]:
    # Absolute paths for the file RPCs, all inside the test's own directory.
    return (str(workdir / "f"), str(workdir / ("d" * 200)), f"{workdir}/\x00x")


SENT: set[str] = set()


def _assert_every_method_sent(service: ServiceDescriptor) -> None:
    missing = {f"/{service.full_name}/{m.name}" for m in service.methods} - SENT
    assert not missing, f"never fuzzed: {sorted(missing)}"


BIG = [("grpc.max_send_message_length", 16 * MIB), ("grpc.max_receive_message_length", 64 * MIB)]


def test_router_every_rpc_hostile_fields(
    router: Router, pool: ThreadPoolExecutor, workdir: Path
) -> None:
    one = st.one_of(_call(ROUTER_SERVICE, _paths(workdir)), _router_item_call())
    calls = st.lists(one, min_size=CALLERS, max_size=CALLERS)
    with grpc.insecure_channel(f"127.0.0.1:{router.port}", options=BIG) as channel:

        @settings(FUZZ, max_examples=100)
        @given(calls)
        def run(batch: list[tuple[str, bool, bytes]]) -> None:
            _batch(pool, channel, batch)

        run()
        _batch(pool, channel, list(_huge_calls(ROUTER_SERVICE, ROUTER_HUGE)))
    _assert_every_method_sent(ROUTER_SERVICE)


def test_execserver_every_rpc_hostile_fields(
    daemon: Daemon, pool: ThreadPoolExecutor, workdir: Path
) -> None:
    calls = st.lists(_call(EXEC_SERVICE, _paths(workdir)), min_size=CALLERS, max_size=CALLERS)
    with grpc.insecure_channel(daemon.target, options=BIG) as channel:

        @settings(FUZZ, max_examples=100)
        @given(calls)
        def run(batch: list[tuple[str, bool, bytes]]) -> None:
            _batch(pool, channel, batch)

        run()
        _batch(pool, channel, list(_huge_calls(EXEC_SERVICE, EXEC_HUGE)))
        assert daemon.proc.poll() is None
    _assert_every_method_sent(EXEC_SERVICE)
