"""The v1 wire contract: committed stubs are fresh, buf lint passes, everything is documented."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor_pool import DescriptorPool
from grpc_reflection.v1alpha import reflection
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)
from shellgate.v1 import exec_pb2, router_pb2

from tests.paths import REPO_ROOT

PROTO_ROOT = REPO_ROOT / "protos"
PROTO_DIR = PROTO_ROOT / "shellgate" / "v1"
PROTOS = sorted(PROTO_DIR.glob("*.proto"))
# The descriptor set with source info is what reflection serves (proto comments included).
STUB_SUFFIXES = ("_pb2.py", "_pb2_grpc.py", "_pb2.pyi", "descriptors.binpb")

# FileDescriptorProto / DescriptorProto / ... field numbers used in SourceCodeInfo paths.
FILE_MESSAGE, FILE_ENUM, FILE_SERVICE = 4, 5, 6
MSG_FIELD, MSG_NESTED, MSG_ENUM, MSG_ONEOF = 2, 3, 4, 8
ENUM_VALUE, SERVICE_METHOD = 2, 2


def _protoc(*args: str) -> None:
    """Run grpc_tools' protoc from the repository root exactly as scripts/gen-protos.sh does."""
    rel = [str(p.relative_to(REPO_ROOT)) for p in PROTOS]
    subprocess.run(
        [sys.executable, "-m", "grpc_tools.protoc", "-I", "protos", *args, *rel],
        cwd=REPO_ROOT,
        check=True,
        capture_output=True,
        timeout=60,
    )


def _stub_names(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir() if p.name.endswith(STUB_SUFFIXES)}


def test_committed_stubs_match_regeneration(tmp_path: Path) -> None:
    """Regenerating into a temp dir yields byte-identical stubs and no missing/extra files."""
    assert PROTOS, "no .proto files found"
    fresh_dir = tmp_path / "shellgate" / "v1"
    fresh_dir.mkdir(parents=True)
    _protoc(f"--python_out={tmp_path}", f"--grpc_python_out={tmp_path}", f"--pyi_out={tmp_path}",
            "--include_source_info", f"--descriptor_set_out={fresh_dir / 'descriptors.binpb'}")
    fresh, committed = _stub_names(fresh_dir), _stub_names(PROTO_DIR)
    assert fresh == committed, f"missing: {fresh - committed}, stale: {committed - fresh}"
    stale = [
        n for n in sorted(fresh) if (fresh_dir / n).read_bytes() != (PROTO_DIR / n).read_bytes()
    ]
    assert not stale, f"stubs differ from the .proto files (run scripts/gen-protos.sh): {stale}"


def _buf() -> str | None:
    local = REPO_ROOT / ".tools" / "node_modules" / ".bin" / "buf"
    return str(local) if local.exists() else shutil.which("buf")


@pytest.mark.external
def test_buf_lint_passes() -> None:
    """`buf lint` (STANDARD + COMMENTS, protos/buf.yaml) reports nothing."""
    buf = _buf()
    if buf is None:
        pytest.skip("buf not installed (.tools/node_modules/.bin/buf or PATH)")
    proc = subprocess.run(
        [buf, "lint"], cwd=PROTO_ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def descriptor_set(tmp_path_factory: pytest.TempPathFactory) -> descriptor_pb2.FileDescriptorSet:
    """All v1 files parsed with source info (comments)."""
    out = tmp_path_factory.mktemp("desc") / "v1.pb"
    _protoc("--include_source_info", f"--descriptor_set_out={out}")
    fds = descriptor_pb2.FileDescriptorSet()
    fds.ParseFromString(out.read_bytes())
    return fds


def _message_elements(
    msg: descriptor_pb2.DescriptorProto, path: tuple[int, ...], name: str
) -> Iterator[tuple[tuple[int, ...], str]]:
    if msg.options.map_entry:  # synthetic map<> entry: nothing to document
        return
    yield path, name
    for i, field in enumerate(msg.field):
        yield (*path, MSG_FIELD, i), f"{name}.{field.name}"
    for i, oneof in enumerate(msg.oneof_decl):
        if not oneof.name.startswith("_"):  # proto3 `optional` synthesises `_name` oneofs
            yield (*path, MSG_ONEOF, i), f"{name}.{oneof.name} (oneof)"
    for i, nested in enumerate(msg.nested_type):
        yield from _message_elements(nested, (*path, MSG_NESTED, i), f"{name}.{nested.name}")
    for i, enum in enumerate(msg.enum_type):
        yield from _enum_elements(enum, (*path, MSG_ENUM, i), f"{name}.{enum.name}")


def _enum_elements(
    enum: descriptor_pb2.EnumDescriptorProto, path: tuple[int, ...], name: str
) -> Iterator[tuple[tuple[int, ...], str]]:
    yield path, name
    for i, value in enumerate(enum.value):
        yield (*path, ENUM_VALUE, i), f"{name}.{value.name}"


def _file_elements(
    f: descriptor_pb2.FileDescriptorProto,
) -> Iterator[tuple[tuple[int, ...], str]]:
    for i, svc in enumerate(f.service):
        yield (FILE_SERVICE, i), svc.name
        for j, method in enumerate(svc.method):
            yield (FILE_SERVICE, i, SERVICE_METHOD, j), f"{svc.name}.{method.name}"
    for i, msg in enumerate(f.message_type):
        yield from _message_elements(msg, (FILE_MESSAGE, i), msg.name)
    for i, enum in enumerate(f.enum_type):
        yield from _enum_elements(enum, (FILE_ENUM, i), enum.name)


def test_every_element_has_a_leading_comment(
    descriptor_set: descriptor_pb2.FileDescriptorSet,
) -> None:
    """Every service, rpc, message, field, oneof and enum value carries a leading comment."""
    missing: list[str] = []
    checked = 0
    for f in descriptor_set.file:
        comments = {
            tuple(loc.path): loc.leading_comments.strip() for loc in f.source_code_info.location
        }
        for path, name in _file_elements(f):
            checked += 1
            if not comments.get(path):
                missing.append(f"{f.name}: {name}")
    assert checked > 300, f"walked only {checked} elements; descriptor walk is broken"
    assert not missing, "undocumented elements:\n" + "\n".join(missing)


def test_services_expose_the_contracted_rpcs() -> None:
    """The RPC sets of both services are exactly the ones ARCHITECTURE.md lists."""
    exec_rpcs = set(exec_pb2.DESCRIPTOR.services_by_name["ExecService"].methods_by_name)
    assert exec_rpcs == {
        "GetInfo", "Start", "Attach", "Read", "Write", "CloseStdin", "Signal", "Resize",
        "Terminate", "List", "ReadFile", "WriteFile", "Remove", "Rename", "Stat",
        "MakeDirectory",
    }  # fmt: skip
    router = router_pb2.DESCRIPTOR.services_by_name["ToolRouterService"]
    assert set(router.methods_by_name) == {
        "ListTools", "Project", "Execute", "ExecuteOnce", "ListEnvironments", "ListSessions",
        "TerminateSession", "Interrupt", "EndThread", "GetServerInfo",
    }  # fmt: skip
    streaming = {
        m.name
        for svc in (exec_pb2.DESCRIPTOR.services_by_name["ExecService"], router)
        for m in svc.methods
        if m.server_streaming or m.client_streaming
    }
    assert streaming == {"Start", "Attach", "Execute"}
    assert not any(m.client_streaming for m in router.methods)


def test_optional_fields_track_presence() -> None:
    """proto3 `optional` fields distinguish unset from zero where the contract relies on it."""
    req = exec_pb2.StartRequest(argv=["true"])
    assert not req.HasField("timeout_ms")
    req.timeout_ms = 0
    assert req.HasField("timeout_ms")
    done = router_pb2.ExecutionCompleted(exit_code=0)
    assert done.HasField("exit_code") and not done.HasField("session_id")
    event = router_pb2.ExecuteResponse(completed=done)
    assert event.WhichOneof("event") == "completed"


def test_reflection_serves_both_services() -> None:
    """A server with reflection enabled lets a client resolve every v1 service and message."""
    names = (
        exec_pb2.DESCRIPTOR.services_by_name["ExecService"].full_name,
        router_pb2.DESCRIPTOR.services_by_name["ToolRouterService"].full_name,
        reflection.SERVICE_NAME,
    )
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    reflection.enable_server_reflection(names, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            grpc.channel_ready_future(channel).result(timeout=10)
            db = ProtoReflectionDescriptorDatabase(channel)
            assert set(names) <= set(db.get_services())
            pool = DescriptorPool(db)
            router = pool.FindServiceByName("shellgate.v1.ToolRouterService")
            execute = router.methods_by_name["Execute"]
            assert execute.output_type.full_name == "shellgate.v1.ExecuteResponse"
            start = pool.FindServiceByName("shellgate.v1.ExecService").FindMethodByName("Start")
            policy = start.input_type.fields_by_name["env_policy"].message_type
            assert policy is not None
            assert policy.full_name == "shellgate.v1.ShellEnvironmentPolicy"
    finally:
        server.stop(grace=None).wait(timeout=10)
