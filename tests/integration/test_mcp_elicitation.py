"""Approvals as MCP elicitations in each client's own form: titled choices as `oneOf`
(`const` + `title`, 2025-11-25 and the 2026 era) for the SDK's client, the deprecated
`enumNames` for a client that negotiated an older protocol; both answers approve.
"""

from __future__ import annotations

import json
import select
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_types import _v2025_11_25 as spec

from tests.integration.mcp_support import MCP, Elicitations, stdio_client, text_of
from tests.integration.mcp_support import rules_dir as make_rules_dir
from tests.integration.test_client_support import RouterProcess, router_env, router_process

pytestmark = pytest.mark.timeout(90)
# What the router offers for a `prompt` rule's command, in its order.
OFFERED = ["approved", "approved_for_session", "denied", "abort"]


@pytest.fixture(scope="module")
def router(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RouterProcess]:
    """A real router with the `echo ask-me` prompt rule, unsandboxed."""
    rules = make_rules_dir(tmp_path_factory.mktemp("elicit-rules"))
    with router_process(["--rules-dir", str(rules), "--sandbox", "danger-full-access"]) as proc:
        yield proc


def _decision_field(params: Any) -> dict[str, Any]:
    field = params.requested_schema["properties"]["decision"]
    assert isinstance(field, dict)
    return field


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_the_sdk_client_gets_titled_choices_as_one_of(
    router: RouterProcess, tmp_path: Path, mode: str
) -> None:
    asks = Elicitations("accept", "approved")
    args = ["--router", f"127.0.0.1:{router.port}", "--cwd", str(tmp_path)]

    async def main() -> str:
        async with stdio_client(args, mode, asks) as client:
            # legacy: 2025-11-25's elicitation/create; auto: the 2026 input-required round trip.
            assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
            return text_of(await client.call_tool("exec_command", {"cmd": "echo ask-me titled"}))

    text = anyio.run(main)
    assert "ask-me titled" in text and "Process exited with code 0" in text, text
    [params] = asks.asked
    field = _decision_field(params)
    assert "enumNames" not in field and "enum" not in field, field
    assert field["oneOf"][0] == {"const": "approved", "title": "Approve once"}
    assert [option["const"] for option in field["oneOf"]] == OFFERED
    assert field["default"] == "denied"
    # The spec's (2025-11-25) titled single-select enum, every option a const and a title.
    titled = spec.TitledSingleSelectEnumSchema.model_validate(field)
    assert [option.title for option in titled.one_of][-1] == "Deny and stop"


class _RawStdioClient:
    """A hand-written MCP client over stdio that speaks one older protocol version."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self._proc = proc

    def send(self, message: dict[str, Any]) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())
        self._proc.stdin.flush()

    def receive(self, timeout_s: float = 30.0) -> dict[str, Any]:
        assert self._proc.stdout is not None
        ready, _, _ = select.select([self._proc.stdout], [], [], timeout_s)
        assert ready, "no message from shellgate mcp"
        line = self._proc.stdout.readline()
        assert line, "shellgate mcp closed stdout"
        message = json.loads(line)
        assert isinstance(message, dict)
        return message


def test_an_older_client_gets_enum_names_and_its_answer_approves(
    router: RouterProcess, tmp_path: Path
) -> None:
    args = ["--router", f"127.0.0.1:{router.port}", "--cwd", str(tmp_path)]
    proc = subprocess.Popen([*MCP, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env=router_env())  # fmt: skip
    try:
        client = _RawStdioClient(proc)
        client.send({"id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "old-client", "version": "1"},
        }})  # fmt: skip
        assert client.receive()["result"]["protocolVersion"] == "2025-06-18"
        client.send({"method": "notifications/initialized"})
        client.send({"id": 2, "method": "tools/call", "params": {
            "name": "exec_command", "arguments": {"cmd": "echo ask-me older"},
        }})  # fmt: skip
        ask = client.receive()
        assert ask["method"] == "elicitation/create", ask
        field = ask["params"]["requestedSchema"]["properties"]["decision"]
        assert "oneOf" not in field, field
        assert field["enum"] == OFFERED
        assert field["enumNames"][:2] == ["Approve once", "Approve for this session"]
        spec.LegacyTitledEnumSchema.model_validate(field)
        client.send({"id": ask["id"], "result": {"action": "accept",
                                                 "content": {"decision": "approved"}}})  # fmt: skip
        result = client.receive()
        assert result["id"] == 2, result
        [content] = result["result"]["content"]
        assert "ask-me older" in content["text"] and not result["result"].get("isError")
    finally:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.close()  # end of the client: the server exits
        try:
            proc.wait(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()
