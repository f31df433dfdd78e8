"""The SDK-client suite: `shellgate mcp --router` over stdio and over streamable HTTP.

Every test runs on both transports against one real router, so each MCP text can be
compared with what `Execute` returns for the same item.
"""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError
from shellgate.client import AsyncClient, function_call_item, turn_context

from tests.child import stop_child
from tests.integration.mcp_support import (
    MCP,
    Elicitations,
    marker,
    mcp_client,
    rules_dir,
    sleeper,
    stable,
    stdio_client,
    text_of,
    wait_gone,
)
from tests.integration.test_client_support import RouterProcess, router_process
from tests.proc_scan import pids_with
from tests.waiting import eventually

pytestmark = pytest.mark.timeout(90)
TRANSPORTS = ["stdio", "http"]


@pytest.fixture(scope="module")
def router(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RouterProcess]:
    """One real router with the test rules, unsandboxed (what the MCP server fronts)."""
    rules = rules_dir(tmp_path_factory.mktemp("mcp-rules"))
    with router_process(["--rules-dir", str(rules), "--sandbox", "danger-full-access"]) as proc:
        yield proc


def _args(router: RouterProcess, cwd: Path, *extra: str) -> list[str]:
    return ["--router", f"127.0.0.1:{router.port}", "--cwd", str(cwd), *extra]


async def _execute_text(port: int, cwd: Path, name: str, arguments: dict[str, Any]) -> str:
    """What Execute returns for the same item (the reference the MCP texts must equal)."""
    turn = turn_context(cwd=str(cwd), approval_policy="on-request", shell_tool_type="unified_exec")
    async with AsyncClient(f"127.0.0.1:{port}") as client:
        done = await client.run(function_call_item(name, arguments), turn)
        return done.output_text


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_tools_commands_patch_and_policy(
    router: RouterProcess, tmp_path: Path, transport: str
) -> None:
    asks = Elicitations("accept", "approved")

    async def main() -> None:
        async with mcp_client(transport, _args(router, tmp_path), elicit=asks) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            # One environment: no list_environments and no environment_id (as in Codex).
            assert list(tools) == ["exec_command", "write_stdin", "apply_patch"]
            assert "environment_id" not in tools["exec_command"].input_schema["properties"]
            async with AsyncClient(f"127.0.0.1:{router.port}") as direct:
                specs = {
                    s.name: s.spec
                    for s in await direct.list_tools(
                        turn_context(
                            cwd=str(tmp_path),
                            approval_policy="on-request",
                            shell_tool_type="unified_exec",
                        )
                    )
                }
            for name in ("exec_command", "write_stdin"):
                assert tools[name].description == specs[name]["description"]
                assert tools[name].input_schema == specs[name]["parameters"]
            assert tools["apply_patch"].description == specs["apply_patch"]["description"]
            assert tools["apply_patch"].input_schema["required"] == ["input"]

            short = await client.call_tool("exec_command", {"cmd": "printf 'hi %s' there"})
            assert not short.is_error
            reference = await _execute_text(
                router.port, tmp_path, "exec_command", {"cmd": "printf 'hi %s' there"}
            )
            assert stable(text_of(short)) == stable(reference)
            assert "Process exited with code 0" in text_of(short) and "hi there" in text_of(short)

            # A long one yields a session; write_stdin polls until it ends.
            long = text_of(
                await client.call_tool(
                    "exec_command",
                    {
                        "cmd": "read line; echo got-$line; sleep 0.3; echo done",
                        "tty": True,
                        "yield_time_ms": 300,
                    },
                )
            )
            assert "Process running with session ID" in long, long
            session_id = int(long.split("session ID ")[1].split()[0])
            typed = text_of(
                await client.call_tool(
                    "write_stdin",
                    {"session_id": session_id, "chars": "abc\n", "yield_time_ms": 2000},
                )
            )
            for _ in range(10):
                if "done" in typed:
                    break
                typed += text_of(
                    await client.call_tool(
                        "write_stdin", {"session_id": session_id, "yield_time_ms": 1000}
                    )
                )
            assert "got-abc" in typed and "done" in typed, typed

            patch = "*** Begin Patch\n*** Add File: made.txt\n+made by mcp\n*** End Patch\n"
            patched = await client.call_tool("apply_patch", {"input": patch})
            assert not patched.is_error, text_of(patched)
            assert (tmp_path / "made.txt").read_text() == "made by mcp\n"

            approved = text_of(await client.call_tool("exec_command", {"cmd": "echo ask-me now"}))
            assert len(asks.asked) == 1 and "ask-me" in asks.asked[0].message
            assert "ask-me now" in approved

            forbidden = await client.call_tool("exec_command", {"cmd": "echo forbidden-thing x"})
            assert len(asks.asked) == 1  # forbidden is never asked, never run
            assert text_of(forbidden) == await _execute_text(
                router.port, tmp_path, "exec_command", {"cmd": "echo forbidden-thing x"}
            )
            assert "forbidden-thing x\n" not in text_of(forbidden).split("Output:")[-1]

    anyio.run(main)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_bad_calls_are_tool_errors(router: RouterProcess, tmp_path: Path, transport: str) -> None:
    name = marker()

    async def main() -> None:
        async with mcp_client(transport, _args(router, tmp_path)) as client:
            malformed = await client.call_tool("exec_command", {"cmd": 42})
            assert malformed.is_error
            assert text_of(malformed) == await _execute_text(
                router.port, tmp_path, "exec_command", {"cmd": 42}
            )
            for tool in ("no_such_tool", "list_environments"):  # the latter: one environment
                unknown = await client.call_tool(tool, {})
                assert unknown.is_error and text_of(unknown) == f"unsupported call: {tool}"
            patch_args = await client.call_tool("apply_patch", {"patch": "x"})
            assert patch_args.is_error and "`input`" in text_of(patch_args)
            # 6 MB: over stdio more than the router takes in one item (a tool error); over
            # HTTP more than the SDK's 4 MiB request body limit (413: an MCP error). Never run.
            huge_cmd = f"{sleeper(name)} # " + "x" * 6_000_000
            if transport == "http":
                with pytest.raises(MCPError):
                    await client.call_tool("exec_command", {"cmd": huge_cmd})
            else:
                huge = await client.call_tool("exec_command", {"cmd": huge_cmd})
                assert huge.is_error, text_of(huge)[:200]
            assert wait_gone(name, 0.5) == []
            # The server is still fine after all of them.
            ok = await client.call_tool("exec_command", {"cmd": "echo still-here"})
            assert "still-here" in text_of(ok)

    anyio.run(main)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_denial_and_fallback(
    router: RouterProcess, tmp_path: Path, transport: str, mode: str
) -> None:
    reference = anyio.run(_denied_reference, router.port, tmp_path)

    async def main() -> None:
        declined = Elicitations("decline")
        args = _args(router, tmp_path)
        async with mcp_client(transport, args, mode=mode, elicit=declined) as client:
            denied = await client.call_tool("exec_command", {"cmd": "echo ask-me please"})
            assert len(declined.asked) == 1
            assert text_of(denied) == reference
        # No elicitation capability: the configured fallback (deny) answers.
        async with mcp_client(transport, args, mode=mode) as client:
            fallback = await client.call_tool("exec_command", {"cmd": "echo ask-me please"})
            assert text_of(fallback) == reference

    anyio.run(main)


async def _denied_reference(port: int, cwd: Path) -> str:
    return await _execute_text(port, cwd, "exec_command", {"cmd": "echo ask-me please"})


@pytest.mark.parametrize("mode", ["legacy", "auto"])
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_session_end_kills_live_process(
    router: RouterProcess, tmp_path: Path, transport: str, mode: str
) -> None:
    # Ends: stdio closed; HTTP DELETE (legacy) or, for the 2026 era's per-caller thread,
    # the server's exit.
    name = marker()

    async def main() -> None:
        async with mcp_client(transport, _args(router, tmp_path), mode=mode) as client:
            text = text_of(
                await client.call_tool("exec_command", {"cmd": sleeper(name), "yield_time_ms": 300})
            )
            assert "Process running with session ID" in text, text
            assert wait_gone(name, 0) != []

    anyio.run(main)
    assert wait_gone(name) == []


def test_disconnect_mid_call_leaves_nothing(router: RouterProcess, tmp_path: Path) -> None:
    name = marker()

    async def main() -> None:
        with anyio.move_on_after(2):
            async with stdio_client(_args(router, tmp_path), mode="legacy") as client:
                await client.call_tool(
                    "exec_command", {"cmd": sleeper(name), "yield_time_ms": 30000}
                )
                raise AssertionError("the call should still be running")

    anyio.run(main)
    assert wait_gone(name) == []


def _rpc(proc: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()


@pytest.mark.parametrize("how", ["sigterm", "stdin-closed"])
def test_a_stdio_front_stopped_mid_call_ends_its_thread(
    router: RouterProcess, tmp_path: Path, how: str
) -> None:
    # What an MCP host does to a server it is done with: close its stdin, or SIGTERM it
    # (the SDK's stdio_client sends SIGTERM 2 s after closing stdin). Either way the
    # front ends its thread before it exits, so the session's process does not outlive it.
    name = marker()
    with subprocess.Popen(
        [*MCP, *_args(router, tmp_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    ) as front:  # fmt: skip
        try:
            _drive_then_stop(front, name, how)
        finally:
            stop_child(front)
    assert wait_gone(name) == []


def _drive_then_stop(front: subprocess.Popen[bytes], name: str, how: str) -> None:
    """Initialize, start a long exec_command, then stop the front as `how` says."""
    _rpc(front, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}})  # fmt: skip
    assert front.stdout is not None
    assert b'"id":1' in front.stdout.readline().replace(b" ", b"")
    _rpc(front, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    _rpc(front, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "exec_command",
        "arguments": {"cmd": sleeper(name), "yield_time_ms": 30000}}})  # fmt: skip
    eventually(lambda: pids_with(name), f"a process named {name}", 20)
    if how == "sigterm":
        front.send_signal(signal.SIGTERM)
    else:
        assert front.stdin is not None
        front.stdin.close()
    assert front.wait(15) in (0, -signal.SIGTERM, 128 + signal.SIGTERM)


def test_item_json_is_codex_shape(tmp_path: Path) -> None:
    # The items the front builds are the ones Execute takes (a check of the translation).
    from shellgate.client.records import ToolSpec
    from shellgate.mcp.tools import call_item

    spec = ToolSpec("apply_patch", json.dumps({"type": "custom", "name": "apply_patch"}), False)
    item = json.loads(call_item(spec, {"input": "P"}, "c1").raw_json)
    assert item == {
        "type": "custom_tool_call",
        "name": "apply_patch",
        "input": "P",
        "call_id": "c1",
    }
