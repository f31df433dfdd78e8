"""Server reflection under both `grpc.reflection.v1` and `v1alpha`, with the proto comments.

grpcio-reflection implements only v1alpha. The v1 protocol's messages are wire-identical
(same fields, numbers and types; only the package differs), so the same servicer answers
under the v1 service name too, and current grpcurl/buf/Postman clients need no fallback. The
v1 schema itself is registered as a renamed copy of the v1alpha file, so a client can also
describe the reflection service it is talking to.

The generated `_pb2` modules carry no source info, so reflection built on them alone answers
without comments; our own files are served from `descriptors.binpb` (protoc
`--include_source_info`, written by scripts/gen-protos.sh), so `grpcurl describe` shows them.
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib import resources
from typing import Any

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool
from grpc_reflection.v1alpha import reflection, reflection_pb2
from grpc_reflection.v1alpha._async import ReflectionServicer

__all__ = ["V1ALPHA_SERVICE_NAME", "V1_SERVICE_NAME", "enable_reflection", "v1_file"]

V1ALPHA_SERVICE_NAME: str = reflection.SERVICE_NAME
V1_SERVICE_NAME = "grpc.reflection.v1.ServerReflection"
_V1ALPHA_PACKAGE = "grpc.reflection.v1alpha"
_V1_PACKAGE = "grpc.reflection.v1"
_V1_FILE = "grpc/reflection/v1/reflection.proto"


def v1_file() -> descriptor_pb2.FileDescriptorProto:
    """The v1 reflection schema: the v1alpha file with its package and type names renamed."""
    proto = descriptor_pb2.FileDescriptorProto()
    reflection_pb2.DESCRIPTOR.CopyToProto(proto)
    proto.name = _V1_FILE
    proto.package = _V1_PACKAGE
    proto.options.Clear()
    prefix, renamed = f".{_V1ALPHA_PACKAGE}.", f".{_V1_PACKAGE}."
    for message in proto.message_type:
        for field in message.field:
            if field.type_name.startswith(prefix):
                field.type_name = renamed + field.type_name[len(prefix) :]
    for service in proto.service:
        for method in service.method:
            method.input_type = renamed + method.input_type[len(prefix) :]
            method.output_type = renamed + method.output_type[len(prefix) :]
    return proto


def _register_v1_schema() -> None:
    pool = descriptor_pool.Default()
    try:
        pool.FindFileByName(_V1_FILE)
    except KeyError:
        pool.Add(v1_file())


def _sourced_files() -> dict[str, bytes]:
    """Our .proto files as FileDescriptorProto bytes with SourceCodeInfo, by file name."""
    data = resources.files("shellgate.v1").joinpath("descriptors.binpb").read_bytes()
    files = descriptor_pb2.FileDescriptorSet.FromString(data).file
    return {f.name: f.SerializeToString() for f in files}


class _CommentedReflection(ReflectionServicer):  # type: ignore[misc]
    """v1alpha's servicer, answering our own files from the descriptor set with comments."""

    def __init__(self, service_names: Iterable[str], sourced: dict[str, bytes]) -> None:
        super().__init__(tuple(service_names))
        self._sourced = sourced

    def _answer(self, request: Any, file: Any) -> reflection_pb2.ServerReflectionResponse:
        seen: dict[str, Any] = {}
        pending = [file]
        while pending:  # the file and its transitive imports, each once
            current = pending.pop()
            if current.name not in seen:
                seen[current.name] = current
                pending.extend(current.dependencies)
        blobs = []
        for name, descriptor in seen.items():
            blob = self._sourced.get(name)
            if blob is None:
                proto = descriptor_pb2.FileDescriptorProto()
                descriptor.CopyToProto(proto)
                blob = proto.SerializeToString()
            blobs.append(blob)
        return reflection_pb2.ServerReflectionResponse(
            file_descriptor_response=reflection_pb2.FileDescriptorResponse(
                file_descriptor_proto=blobs
            ),
            original_request=request,
        )

    def _file_by_filename(self, request: Any, filename: str) -> Any:
        try:
            file = self._pool.FindFileByName(filename)
        except KeyError:
            return super()._file_by_filename(request, filename)
        return self._answer(request, file)

    def _file_containing_symbol(self, request: Any, fully_qualified_name: str) -> Any:
        try:
            file = self._pool.FindFileContainingSymbol(fully_qualified_name)
        except KeyError:
            return super()._file_containing_symbol(request, fully_qualified_name)
        return self._answer(request, file)


def enable_reflection(service_names: Iterable[str], server: grpc.aio.Server) -> None:
    """Serve reflection v1 and v1alpha for `service_names` (plus both reflection services)."""
    _register_v1_schema()
    names = (*service_names, V1ALPHA_SERVICE_NAME, V1_SERVICE_NAME)
    servicer = _CommentedReflection(dict.fromkeys(names), _sourced_files())
    handler = grpc.stream_stream_rpc_method_handler(
        servicer.ServerReflectionInfo,
        request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
        response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString,
    )
    for service in (V1ALPHA_SERVICE_NAME, V1_SERVICE_NAME):
        methods = {"ServerReflectionInfo": handler}
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service, methods),))
