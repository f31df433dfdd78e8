"""`shellgate mcp --http` (private router) with the `mcp` SDK's client over streamable HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import pytest

from tests.integration.mcp_support import (
    Elicitations,
    http_client,
    http_server,
    marker,
    rules_dir,
    sleeper,
    text_of,
    token_file,
    wait_gone,
)
from tests.proc_scan import pids_with

pytestmark = pytest.mark.timeout(90)


class Served:
    """The running `shellgate mcp --http` and how to reach it."""

    def __init__(self, port: int, token: str, cwd: Path) -> None:
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.token = token
        self.cwd = cwd


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One MCP server over HTTP with its own embedded router, the test rules and a token."""
    root = tmp_path_factory.mktemp("mcp-http")
    path, token = token_file(root)
    args = ["--rules-dir", str(rules_dir(root)), "--sandbox", "danger-full-access",
            "--cwd", str(root), "--http-token-file", str(path)]  # fmt: skip
    with http_server(args) as (_, port):
        yield Served(port, token, root)


def test_bearer_token_is_required(served: Served) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        response = httpx2.post(served.url, json=body, headers=headers, timeout=10)
        assert response.status_code == 401


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_commands_approvals_and_session_end(served: Served, mode: str) -> None:
    asks = Elicitations("accept", "approved_for_session")
    name = marker()

    async def main() -> None:
        async with http_client(served.url, served.token, mode, asks) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            assert names == ["exec_command", "write_stdin", "apply_patch"]
            short = text_of(await client.call_tool("exec_command", {"cmd": "echo over-http"}))
            assert "Process exited with code 0" in short and "over-http" in short
            first = text_of(await client.call_tool("exec_command", {"cmd": "echo ask-me one"}))
            assert "ask-me one" in first and len(asks.asked) == 1
            forbidden = await client.call_tool("exec_command", {"cmd": "echo forbidden-thing"})
            assert "forbidden-thing\n" not in text_of(forbidden) and len(asks.asked) == 1
            if mode == "legacy":
                # Approved for the session: the same command is not asked again.
                again = text_of(await client.call_tool("exec_command", {"cmd": "echo ask-me one"}))
                assert "ask-me one" in again and len(asks.asked) == 1
                live = text_of(
                    await client.call_tool(
                        "exec_command", {"cmd": sleeper(name), "yield_time_ms": 300}
                    )
                )
                assert "Process running with session ID" in live, live
                assert pids_with(name) != []

    anyio.run(main)
    # Legacy: the MCP session ended (DELETE) and its thread with it.
    assert wait_gone(name) == []


def test_disconnect_mid_call_leaves_nothing(tmp_path: Path) -> None:
    name = marker()
    path, token = token_file(tmp_path)
    args = ["--sandbox", "danger-full-access", "--cwd", str(tmp_path),
            "--http-token-file", str(path), "--session-idle-timeout", "1"]  # fmt: skip

    async def main(url: str) -> None:
        with anyio.move_on_after(1.5):
            async with http_client(url, token, "legacy") as client:
                await client.call_tool(
                    "exec_command", {"cmd": sleeper(name), "yield_time_ms": 2000}
                )
                raise AssertionError("the call should still be running")
        assert pids_with(name) != []
        # The server keeps serving other sessions.
        async with http_client(url, token, "legacy") as client:
            ok = text_of(await client.call_tool("exec_command", {"cmd": "echo next"}))
            assert "next" in ok

    with http_server(args) as (_, port):
        anyio.run(main, f"http://127.0.0.1:{port}/mcp")
        # The abandoned session idles out once its call is done; its thread ends with it.
        assert wait_gone(name, 15) == []


def test_no_elicitation_gets_the_fallback(served: Served) -> None:
    async def main() -> None:
        async with http_client(served.url, served.token, "legacy") as client:
            denied = await client.call_tool("exec_command", {"cmd": "echo ask-me two"})
            assert "rejected" in text_of(denied), text_of(denied)

    anyio.run(main)
