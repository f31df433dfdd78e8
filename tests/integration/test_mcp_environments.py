"""`shellgate mcp` over a router with a second (remote) environment: list_environments and
`environment_id` appear, and a command runs where the model chose."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest
from shellgate.client import AsyncClient, function_call_item, turn_context

from tests.execserver_harness import daemon_subprocess
from tests.integration.mcp_support import (
    generated_token,
    http_client,
    http_server,
    stdio_client,
    text_of,
)
from tests.integration.test_client_support import router_process

pytestmark = pytest.mark.timeout(90)


@dataclass(frozen=True)
class TwoEnvironments:
    """A router with `local` and `box` (a real exec-server daemon rooted at `box_root`)."""

    router_port: int
    daemon_target: str
    local_cwd: Path
    box_root: Path


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TwoEnvironments]:
    """The daemon, its root holding a file only it has, and the router naming it `box`."""
    root = tmp_path_factory.mktemp("mcp-envs")
    box_root, local_cwd = root / "box-root", root / "local"
    box_root.mkdir()
    local_cwd.mkdir()
    (box_root / "only-on-box.txt").write_text("box marker\n")
    with daemon_subprocess(["--root", str(box_root)]) as daemon:
        config = root / "router.toml"
        config.write_text(
            "environment_probe_interval_ms = 0\n"
            f'[[environments]]\nid = "box"\ntarget = "{daemon.target}"\ninsecure = true\n'
        )
        args = ["--config", str(config), "--sandbox", "danger-full-access"]
        with router_process(args) as router:
            yield TwoEnvironments(router.port, daemon.target, local_cwd, box_root)


def _args(two: TwoEnvironments) -> list[str]:
    return ["--router", f"127.0.0.1:{two.router_port}", "--cwd", str(two.local_cwd)]


async def _execute_text(two: TwoEnvironments, arguments: dict[str, object]) -> str:
    """What Execute returns for exec_command with the front's two-environment turn."""
    turn = turn_context(
        environments=[("local", str(two.local_cwd)), ("box", "")],
        approval_policy="on-request", shell_tool_type="unified_exec",
    )  # fmt: skip
    async with AsyncClient(f"127.0.0.1:{two.router_port}") as client:
        done = await client.run(function_call_item("exec_command", arguments), turn)
        return done.output_text


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_second_environment_is_offered_and_used(two: TwoEnvironments, transport: str) -> None:
    async def exercise(client: object) -> None:
        from mcp.client import Client

        assert isinstance(client, Client)
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert list(tools) == ["exec_command", "write_stdin", "apply_patch", "list_environments"]
        assert "environment_id" in tools["exec_command"].input_schema["properties"]

        listed = await client.call_tool("list_environments", {})
        assert not listed.is_error
        rows = [line.split("\t") for line in text_of(listed).splitlines()]
        assert rows == [["local", "local", "reachable"], ["box", two.daemon_target, "reachable"]]

        probe = {"cmd": "pwd; cat only-on-box.txt"}
        there = text_of(await client.call_tool("exec_command", {**probe, "environment_id": "box"}))
        assert str(two.box_root) in there and "box marker" in there, there
        here = text_of(await client.call_tool("exec_command", probe))
        assert str(two.local_cwd) in here and "box marker" not in here, here

        bad = {"cmd": "echo never", "environment_id": "nowhere"}
        unknown = await client.call_tool("exec_command", bad)
        assert unknown.is_error
        assert text_of(unknown) == await _execute_text(two, bad)

    async def main() -> None:
        if transport == "stdio":
            async with stdio_client(_args(two)) as client:
                await exercise(client)
            return
        with http_server(_args(two)) as (_, port):
            url = f"http://127.0.0.1:{port}/mcp"
            async with http_client(url, generated_token(port)) as client:
                await exercise(client)

    anyio.run(main)
