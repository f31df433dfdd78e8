"""Server reflection v1 (beside v1alpha) on both daemons, serving the proto comments.

A raw `grpc.reflection.v1.ServerReflection` client (its messages built from the v1 schema)
lists the services and fetches the file of a service; the described method carries the
comment written above it in the .proto. `buf curl --reflect-protocol grpc-v1` is a second,
independent v1 client (skipped when buf is absent).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)
from shellgate.common.grpc.reflection import V1_SERVICE_NAME, v1_file

from tests.execserver_harness import daemon_subprocess
from tests.paths import REPO_ROOT
from tests.router_harness import router_subprocess

BUF = os.environ.get("SHELLGATE_BUF") or str(REPO_ROOT / ".tools/node_modules/.bin/buf")
if not os.path.exists(BUF):
    BUF = shutil.which("buf") or ""

# FileDescriptorProto.service = 6, ServiceDescriptorProto.method = 2 (SourceCodeInfo paths).
_FILE_SERVICE, _SERVICE_METHOD = 6, 2

# (service, a method, its .proto file) per daemon.
_SURFACES = {
    "router": ("shellgate.v1.ToolRouterService", "Execute", "shellgate/v1/router.proto"),
    "execserver": ("shellgate.v1.ExecService", "Start", "shellgate/v1/exec.proto"),
}


def _v1_messages() -> tuple[Any, Any]:
    pool = descriptor_pool.DescriptorPool()
    pool.Add(v1_file())
    request = pool.FindMessageTypeByName("grpc.reflection.v1.ServerReflectionRequest")
    response = pool.FindMessageTypeByName("grpc.reflection.v1.ServerReflectionResponse")
    return message_factory.GetMessageClass(request), message_factory.GetMessageClass(response)


V1Request, V1Response = _v1_messages()


@pytest.fixture(scope="module", params=sorted(_SURFACES))
def daemon(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """(kind, host:port) of a real router or exec-server subprocess."""
    if request.param == "router":
        with router_subprocess(["--log-level", "WARNING"]) as (_proc, port):
            yield "router", f"127.0.0.1:{port}"
    else:
        with daemon_subprocess(["--log-level", "WARNING"]) as d:
            yield "execserver", d.target


def reflect_v1(target: str, **field: Any) -> Any:
    """One request on grpc.reflection.v1.ServerReflection/ServerReflectionInfo."""
    with grpc.insecure_channel(target) as channel:
        call = channel.stream_stream(
            f"/{V1_SERVICE_NAME}/ServerReflectionInfo",
            request_serializer=V1Request.SerializeToString,
            response_deserializer=V1Response.FromString,
        )
        [answer] = list(call(iter([V1Request(**field)]), timeout=20))
    return answer


def _comment_above(proto_file: str, method: str) -> str:
    """The `//` comment lines right above `rpc <method>(` in the .proto source."""
    lines = (REPO_ROOT / "protos" / proto_file).read_text().splitlines()
    index = next(i for i, line in enumerate(lines) if re.match(rf"\s*rpc {method}\(", line))
    comment: list[str] = []
    for line in reversed(lines[:index]):
        if not line.strip().startswith("//"):
            break
        comment.insert(0, line.strip()[2:])
    return "".join(f"{text}\n" for text in comment)


def test_v1_lists_services_with_both_reflection_protocols(daemon: tuple[str, str]) -> None:
    kind, target = daemon
    answer = reflect_v1(target, list_services="")
    names = {service.name for service in answer.list_services_response.service}
    assert {_SURFACES[kind][0], "grpc.health.v1.Health", V1_SERVICE_NAME,
            "grpc.reflection.v1alpha.ServerReflection"} <= names  # fmt: skip


def test_v1_describes_a_method_with_its_proto_comment(daemon: tuple[str, str]) -> None:
    kind, target = daemon
    service, method, proto_file = _SURFACES[kind]
    answer = reflect_v1(target, file_containing_symbol=service)
    files = [descriptor_pb2.FileDescriptorProto.FromString(blob)
             for blob in answer.file_descriptor_response.file_descriptor_proto]  # fmt: skip
    [file] = [f for f in files if f.name == proto_file]
    [service_index] = [i for i, s in enumerate(file.service) if s.name == service.split(".")[-1]]
    methods = [m.name for m in file.service[service_index].method]
    path = [_FILE_SERVICE, service_index, _SERVICE_METHOD, methods.index(method)]
    [location] = [loc for loc in file.source_code_info.location if list(loc.path) == path]
    expected = _comment_above(proto_file, method)
    assert expected.strip() and location.leading_comments == expected
    # Imports come along (a client resolves the request/response types from them).
    assert {f.name for f in files} >= {proto_file, "shellgate/v1/shell.proto"}


def test_v1_describes_itself_and_v1alpha_still_answers(daemon: tuple[str, str]) -> None:
    kind, target = daemon
    answer = reflect_v1(target, file_containing_symbol=V1_SERVICE_NAME)
    [blob] = answer.file_descriptor_response.file_descriptor_proto
    assert descriptor_pb2.FileDescriptorProto.FromString(blob).package == "grpc.reflection.v1"
    missing = reflect_v1(target, file_containing_symbol="no.such.Service")
    assert missing.error_response.error_code == grpc.StatusCode.NOT_FOUND.value[0]
    with grpc.insecure_channel(target) as channel:
        pool = descriptor_pool.DescriptorPool(ProtoReflectionDescriptorDatabase(channel))
        found = pool.FindServiceByName(_SURFACES[kind][0])
        assert _SURFACES[kind][1] in found.methods_by_name


@pytest.mark.external
@pytest.mark.skipif(not BUF, reason="buf CLI not installed (npm @bufbuild/buf in .tools)")
def test_buf_curl_uses_reflection_v1(daemon: tuple[str, str]) -> None:
    kind, target = daemon
    args = [BUF, "curl", "--protocol", "grpc", "--http2-prior-knowledge", "--reflect",
            "--reflect-protocol", "grpc-v1", "--list-methods", f"http://{target}"]  # fmt: skip
    result = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    service, method, _ = _SURFACES[kind]
    assert f"{service}/{method}" in result.stdout.split()
