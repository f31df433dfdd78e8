"""The Node.js example client against a live router: same wire, same answers as Python."""

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
from google.protobuf import json_format
from shellgate.client import Client, exec_command_item, shell_command_item, turn_context
from shellgate.v1 import router_pb2

from tests.integration.test_client_support import RouterProcess, router_process
from tests.paths import REPO_ROOT

NODE = shutil.which("node")
EXAMPLE = REPO_ROOT / "client" / "examples" / "node"
CLIENT_JS = EXAMPLE / "client.js"
# The example's own install (`npm ci` from its package-lock.json, scripts/setup-test.sh),
# else the npm peers in .tools.
NODE_PATH = os.environ.get("SHELLGATE_NODE_PATH") or str(
    EXAMPLE / "node_modules" if (EXAMPLE / "node_modules").is_dir()
    else REPO_ROOT / ".tools" / "node_modules")


def _node_env() -> dict[str, str]:
    return dict(os.environ, NODE_PATH=NODE_PATH)


def _missing() -> str | None:
    if NODE is None:
        return "node is not installed"
    probe = subprocess.run(
        [NODE, "-e", "require.resolve('@grpc/grpc-js'); require.resolve('@grpc/proto-loader')"],
        env=_node_env(), capture_output=True, timeout=60, check=False,
    )
    if probe.returncode != 0:
        return f"@grpc/grpc-js or @grpc/proto-loader not found under NODE_PATH={NODE_PATH}"
    return None


pytestmark = pytest.mark.external
_REASON = _missing()
if _REASON is not None:
    pytestmark = [pytest.mark.external, pytest.mark.skip(reason=_REASON)]  # type: ignore[assignment]


@pytest.fixture(scope="module")
def router() -> Iterator[RouterProcess]:
    """One real router for the module."""
    with router_process() as process:
        yield process


def node(command: str, target: str, *args: str) -> list[dict[str, Any]]:
    """Run client.js and return its JSON lines."""
    assert NODE is not None
    proc = subprocess.run([NODE, str(CLIENT_JS), command, "--target", target, *args],
                          env=_node_env(), capture_output=True, text=True, timeout=120,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def _as_json(message: Any) -> dict[str, Any]:
    value: dict[str, Any] = json_format.MessageToDict(message, preserving_proto_field_name=True)
    return value


def test_project_answer_equals_the_python_clients(router: RouterProcess, tmp_path: Path) -> None:
    turn = turn_context(approval_policy="untrusted", cwd=str(tmp_path))
    turn_file = tmp_path / "turn.json"
    turn_file.write_text(json.dumps(_as_json(turn)))
    items = [
        exec_command_item("git status && rg -n 'TODO' src | head", call_id="n1", tty=True),
        shell_command_item("cat <<'EOF' > out.txt\nhi\nEOF", call_id="n2", workdir="sub"),
        exec_command_item("echo {", call_id="n3", prefix_rule=["echo"]),
    ]
    with Client(router.target) as client:
        for index, item in enumerate(items):
            thread = f"node-compare-{index}"
            expected = _as_json(router_pb2.ProjectResponse(
                projection=client.project(item, turn, thread_id=thread)))
            lines = node("project", router.target, "--item", item.raw_json, "--thread", thread,
                         "--turn", str(turn_file))
            assert [line["rpc"] for line in lines] == ["Project"]
            assert lines[0]["response"] == expected


def test_list_tools_answer_equals_the_python_clients(router: RouterProcess) -> None:
    with Client(router.target) as client:
        tools = client.list_tools()
    lines = node("list-tools", router.target)
    answer = lines[0]["response"]["tools"]
    assert [(t["name"], t["json"], t.get("hidden", False)) for t in answer] == [
        (t.name, t.json, t.hidden) for t in tools]


def test_execute_stream_from_node(router: RouterProcess) -> None:
    item = shell_command_item("echo from-node; exit 4", call_id="n-exec")
    lines = node("execute", router.target, "--item", item.raw_json, "--thread", "node-exec")
    events = [next(iter(line["response"])) for line in lines]
    assert events[0] == "projection" and events[1] == "started" and events[-1] == "completed"
    data = b"".join(base64.b64decode(line["response"]["output"]["data"])
                    for line in lines if "output" in line["response"])
    assert b"from-node\n" in data
    completed = lines[-1]["response"]["completed"]
    assert completed["exit_code"] == 4 and completed["termination"] == "TERMINATION_REASON_EXITED"
    assert json.loads(completed["output_item_json"])["call_id"] == "n-exec"
    with Client(router.target) as client:
        client.end_thread("node-exec")


def _turn_file(tmp_path: Path, **turn: Any) -> str:
    path = tmp_path / "turn.json"
    path.write_text(json.dumps(_as_json(turn_context(cwd=str(tmp_path), **turn))))
    return str(path)


def _events(lines: list[dict[str, Any]]) -> list[str]:
    return [next(iter(line["response"])) for line in lines]


def _completions(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [line["response"]["completed"] for line in lines if "completed" in line["response"]]


def test_run_resumes_an_approval(router: RouterProcess, tmp_path: Path) -> None:
    turn = _turn_file(tmp_path, approval_policy="untrusted",
                      permission_profile="danger-full-access")
    lines = node("run", router.target, "--cmd", "touch made-by-node", "--turn", turn,
                 "--thread", "node-approve", "--approve", "yes")
    events = _events(lines)
    assert "approval_required" in events
    assert events.index("approval_required") < events.index("completed")
    [done] = _completions(lines)
    assert done["exit_code"] == 0 and (tmp_path / "made-by-node").exists()


def test_run_denied_approval_runs_nothing(router: RouterProcess, tmp_path: Path) -> None:
    turn = _turn_file(tmp_path, approval_policy="untrusted",
                      permission_profile="danger-full-access")
    lines = node("run", router.target, "--cmd", "touch denied-file", "--turn", turn,
                 "--thread", "node-deny", "--approve", "no")
    [done] = _completions(lines)
    assert "started" not in _events(lines) and not (tmp_path / "denied-file").exists()
    assert "rejected" in done["output_text"].lower()


def test_run_polls_a_running_session_with_write_stdin(router: RouterProcess, tmp_path: Path) -> None:
    turn = _turn_file(tmp_path, approval_policy="never", permission_profile="danger-full-access")
    lines = node("run", router.target, "--cmd", "echo first; sleep 1; echo second",
                 "--yield-ms", "250", "--turn", turn, "--thread", "node-poll")
    done = _completions(lines)
    assert len(done) >= 2  # the exec_command yielded with a session, then write_stdin polls
    assert "session_id" in done[0] and "session_id" not in done[-1]
    assert done[-1]["exit_code"] == 0
    data = b"".join(base64.b64decode(line["response"]["output"]["data"])
                    for line in lines if "output" in line["response"])
    assert data.index(b"first") < data.index(b"second")
    assert json.loads(done[-1]["output_item_json"])["type"] == "function_call_output"


def test_run_apply_patch(router: RouterProcess, tmp_path: Path) -> None:
    turn = _turn_file(tmp_path, approval_policy="on-request")
    patch = tmp_path / "change.patch"
    patch.write_text("*** Begin Patch\n*** Add File: from-node.txt\n+patched by node\n"
                     "*** End Patch")
    lines = node("run", router.target, "--patch", str(patch), "--turn", turn,
                 "--thread", "node-patch", "--approve", "yes")
    [done] = _completions(lines)
    assert done["success"] is True, done
    assert json.loads(done["output_item_json"])["type"] == "custom_tool_call_output"
    assert (tmp_path / "from-node.txt").read_text() == "patched by node\n"
