"""Both daemons driven by `buf curl` with server reflection only (no local .proto files):
list services, health, ListTools, Project with JSON, streaming Execute; GetInfo and a
streaming Start on the exec-server. Skipped when the buf binary is absent."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.execserver_harness import Daemon, daemon_subprocess
from tests.router_harness import router_subprocess

REPO = Path(__file__).resolve().parents[2]
BUF = os.environ.get("SHELLGATE_BUF") or str(REPO / ".tools/node_modules/.bin/buf")
if not Path(BUF).exists():
    BUF = shutil.which("buf") or ""

pytestmark = [
    pytest.mark.external,
    pytest.mark.skipif(not BUF, reason="buf CLI not installed (npm @bufbuild/buf in .tools)"),
]

INHERIT_ALL = {"inherit": "SHELL_ENVIRONMENT_INHERIT_ALL"}


def buf_curl(base: str, method: str = "", data: Any = None, *flags: str) -> list[Any]:
    """Run `buf curl` against base (http://host:port) and parse every JSON message printed."""
    args = [BUF, "curl", "--protocol", "grpc", "--http2-prior-knowledge", "--reflect", *flags]
    if data is not None:
        args += ["-d", json.dumps(data)]
    args.append(f"{base}/{method}" if method else base)
    result = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, (args, result.stderr)
    decoder, text, out = json.JSONDecoder(), result.stdout.strip(), []
    while text:
        value, end = decoder.raw_decode(text)
        out.append(value)
        text = text[end:].lstrip()
    return out


def listed(base: str, flag: str) -> set[str]:
    """Names printed by --list-services / --list-methods."""
    args = [BUF, "curl", "--protocol", "grpc", "--http2-prior-knowledge", "--reflect", flag, base]
    result = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return set(result.stdout.split())


@pytest.fixture(scope="module")
def router() -> Iterator[str]:
    with router_subprocess(["--log-level", "WARNING"]) as (_proc, port):
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def daemon() -> Iterator[Daemon]:
    with daemon_subprocess(["--log-level", "WARNING"]) as d:
        yield d


def _item(name: str, arguments: dict[str, Any], call_id: str = "c1") -> dict[str, str]:
    raw = {"type": "function_call", "name": name, "arguments": json.dumps(arguments),
           "call_id": call_id}  # fmt: skip
    return {"rawJson": json.dumps(raw)}


def test_router_lists_services_and_methods(router: str) -> None:
    services = listed(router, "--list-services")
    assert {"shellgate.v1.ToolRouterService", "grpc.health.v1.Health"} <= services
    methods = listed(router, "--list-methods")
    for rpc in ("ListTools", "Project", "Execute", "ListEnvironments", "EndThread"):
        assert f"shellgate.v1.ToolRouterService/{rpc}" in methods


def test_router_health_check(router: str) -> None:
    assert buf_curl(router, "grpc.health.v1.Health/Check", {}) == [{"status": "SERVING"}]
    reply = buf_curl(
        router, "grpc.health.v1.Health/Check", {"service": "shellgate.v1.ToolRouterService"}
    )
    assert reply == [{"status": "SERVING"}]


def test_router_list_tools(router: str) -> None:
    [reply] = buf_curl(router, "shellgate.v1.ToolRouterService/ListTools", {"threadId": "t"})
    names = [tool["name"] for tool in reply["tools"]]
    assert names == ["exec_command", "write_stdin", "apply_patch"]
    assert json.loads(reply["tools"][0]["json"])["name"] == "exec_command"


def test_router_project_with_json(router: str) -> None:
    request = {
        "threadId": "t",
        "turn": {"environments": [{"environmentId": "local"}]},
        "item": _item("exec_command", {"cmd": "git status", "login": False}),
    }
    [reply] = buf_curl(router, "shellgate.v1.ToolRouterService/Project", request)
    command = reply["projection"]["shell"]["elements"][0]["command"]
    assert command["handlerArgv"][1:] == ["-c", "git status"]
    assert reply["projection"]["callId"] == "c1"


def test_router_streaming_execute(router: str) -> None:
    request = {
        "threadId": "t",
        "turn": {
            "environments": [{"environmentId": "local"}],
            "shellEnvironmentPolicy": INHERIT_ALL,
        },
        "item": _item("exec_command", {"cmd": "echo via-buf", "login": False}, "b1"),
    }
    events = buf_curl(router, "shellgate.v1.ToolRouterService/Execute", request)
    kinds = [next(iter(e)) for e in events]
    assert kinds[0] == "projection" and kinds[-1] == "completed"
    assert "started" in kinds and "output" in kinds
    done = events[-1]["completed"]
    assert done["outputText"].endswith("Output:\nvia-buf\n")
    assert json.loads(done["outputItemJson"])["call_id"] == "b1"


def test_router_errors_keep_their_codes(router: str) -> None:
    args = [BUF, "curl", "--protocol", "grpc", "--http2-prior-knowledge", "--reflect",
            "-d", json.dumps({"threadId": "bad id!"}),
            f"{router}/shellgate.v1.ToolRouterService/ListTools"]  # fmt: skip
    result = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "invalid_argument" in result.stderr.lower()


def test_execserver_surface(daemon: Daemon) -> None:
    base = f"http://{daemon.target}"
    services = listed(base, "--list-services")
    assert {"shellgate.v1.ExecService", "grpc.health.v1.Health"} <= services
    assert buf_curl(base, "grpc.health.v1.Health/Check", {}) == [{"status": "SERVING"}]
    [info] = buf_curl(base, "shellgate.v1.ExecService/GetInfo", {})
    assert info["shell"]["path"] and info["os"]
    start = {"argv": ["sh", "-c", "echo from-daemon"], "envPolicy": INHERIT_ALL}
    events = buf_curl(base, "shellgate.v1.ExecService/Start", start)
    kinds = [next(iter(e["event"])) for e in events]
    assert kinds[0] == "started" and kinds[-1] == "closed" and "exited" in kinds
    # bytes fields travel as base64 in protobuf JSON, one string per chunk.
    data = b"".join(
        base64.b64decode(e["event"]["output"]["data"]) for e in events if "output" in e["event"]
    )
    assert data == b"from-daemon\n"
