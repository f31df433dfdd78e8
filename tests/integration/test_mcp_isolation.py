"""`shellgate mcp --http`: two bearer tokens never share a thread, in either protocol era.

The MCP server fronts a token-protected router with its own single router token (all MCP
callers are one subject to the router), so the isolation proven here is the front's.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx2
import mcp.types as types
import pytest
from mcp.shared.exceptions import MCPError
from shellgate.client import AsyncClient, function_call_item, turn_context

from tests.integration.mcp_support import (
    Elicitations,
    http_client,
    http_server,
    marker,
    rules_dir,
    sleeper,
    text_of,
    wait_gone,
)
from tests.integration.test_client_support import router_process

pytestmark = pytest.mark.timeout(90)

MODERN = "2026-07-28"
ROUTER_TOKEN = "tok-front-router-2b7c"


@dataclass(frozen=True)
class Front:
    """The MCP server, its two callers' tokens, and the router behind it."""

    url: str
    alice: str
    bob: str
    router_port: int


def _secret_file(path: Path, text: str) -> Path:
    path.write_text(text)
    os.chmod(path, 0o600)
    return path


@pytest.fixture(scope="module")
def front(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Front]:
    """A router taking one token, and `shellgate mcp --http --router` taking two."""
    root = tmp_path_factory.mktemp("mcp-iso")
    router_tokens = _secret_file(root / "router.tokens", f"mcp-front {ROUTER_TOKEN}\n")
    config = _secret_file(root / "router.toml", f'token_file = "{router_tokens}"\n')
    front_token = _secret_file(root / "front.token", ROUTER_TOKEN + "\n")
    mcp_tokens = _secret_file(root / "mcp.tokens", "alice tok-alice-91\nbob tok-bob-73\n")
    router_args = ["--config", str(config), "--rules-dir", str(rules_dir(root)),
                   "--sandbox", "danger-full-access"]  # fmt: skip
    with router_process(router_args) as router:
        args = ["--router", f"127.0.0.1:{router.port}", "--token-file", str(front_token),
                "--http-token-file", str(mcp_tokens), "--cwd", str(root)]  # fmt: skip
        with http_server(args) as (_, port):
            yield Front(f"http://127.0.0.1:{port}/mcp", "tok-alice-91", "tok-bob-73", router.port)


async def _unknown_session_text(front: Front, session_id: int) -> str:
    """What Execute answers for write_stdin to `session_id` on a thread that lacks it."""
    turn = turn_context(approval_policy="on-request", shell_tool_type="unified_exec")
    async with AsyncClient(f"127.0.0.1:{front.router_port}", token=ROUTER_TOKEN) as client:
        item = function_call_item("write_stdin", {"session_id": session_id, "yield_time_ms": 250})
        done = await client.run(item, turn, "iso-reference")
        return done.output_text


def _session_id(text: str) -> int:
    assert "Process running with session ID" in text, text
    return int(text.split("session ID ")[1].split()[0])


@pytest.mark.parametrize("mode", [MODERN, "legacy"])
def test_other_token_reaches_no_session_and_no_grant(front: Front, mode: str) -> None:
    name = marker()
    alice_asks = Elicitations("accept", "approved_for_session")
    bob_asks = Elicitations("decline")
    command = {"cmd": f"echo ask-me {mode}"}

    async def main() -> None:
        async with (
            http_client(front.url, front.alice, mode, alice_asks) as alice,
            http_client(front.url, front.bob, mode, bob_asks) as bob,
        ):
            live = {"cmd": sleeper(name), "yield_time_ms": 300}
            session_id = _session_id(text_of(await alice.call_tool("exec_command", live)))
            poll = {"session_id": session_id, "yield_time_ms": 250}
            # Alice reaches her session; Bob, with the same id, gets Codex's unknown-session
            # text (what Execute says on a thread without it), and the process lives on.
            assert "Process running" in text_of(await alice.call_tool("write_stdin", poll))
            stolen = await bob.call_tool("write_stdin", poll)
            assert text_of(stolen) == await _unknown_session_text(front, session_id)
            killed = await bob.call_tool("write_stdin", {**poll, "chars": "\x03"})
            assert text_of(killed) == text_of(stolen)
            assert wait_gone(name, 0) != []

            # Alice's "approved for this session" grant is hers: Bob is asked again.
            assert f"ask-me {mode}" in text_of(await alice.call_tool("exec_command", command))
            assert f"ask-me {mode}" in text_of(await alice.call_tool("exec_command", command))
            assert len(alice_asks.asked) == 1
            denied = text_of(await bob.call_tool("exec_command", command))
            assert len(bob_asks.asked) == 1 and "rejected" in denied, denied

    anyio.run(main)
    if mode == "legacy":
        # Alice's MCP session ended (DELETE), and her thread with it.
        assert wait_gone(name) == []


def test_http_session_belongs_to_its_token(front: Front) -> None:
    """A handshake-era session id presented with another token is an unknown session."""
    headers = {"Accept": "application/json, text/event-stream"}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "iso", "version": "1"}}}  # fmt: skip
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
    with httpx2.Client(timeout=10) as http:
        opened = http.post(
            front.url, json=init, headers={**headers, "Authorization": f"Bearer {front.alice}"}
        )
        assert opened.status_code == 200, opened.text
        session = opened.headers["mcp-session-id"]
        own = {**headers, "Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-11-25"}
        mine = http.post(
            front.url, json=listing, headers={**own, "Authorization": f"Bearer {front.alice}"}
        )
        theirs = http.post(
            front.url, json=listing, headers={**own, "Authorization": f"Bearer {front.bob}"}
        )
        assert mine.status_code == 200 and theirs.status_code == 404, (mine.text, theirs.text)
        http.delete(front.url, headers={**own, "Authorization": f"Bearer {front.alice}"})


def test_unknown_token_is_refused(front: Front) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    for headers in ({}, {"Authorization": "Bearer tok-alice-9"}, {"Authorization": "Basic x"}):
        assert httpx2.post(front.url, json=body, headers=headers, timeout=10).status_code == 401


def test_approval_state_cannot_be_replayed_by_another_token(front: Front, tmp_path: Path) -> None:
    """Bob echoing Alice's sealed requestState (with an approving answer) runs nothing."""
    made = tmp_path / "replayed.txt"
    command = {"cmd": f"echo ask-me replay > {made}"}
    approve = {"approval": types.ElicitResult(action="accept", content={"decision": "approved"})}

    async def main() -> None:
        async with (
            http_client(front.url, front.alice, MODERN, Elicitations()) as alice,
            http_client(front.url, front.bob, MODERN, Elicitations()) as bob,
        ):
            asked = await alice.session.call_tool(
                "exec_command", command, allow_input_required=True
            )
            assert isinstance(asked, types.InputRequiredResult) and asked.request_state
            try:
                replayed = await bob.session.call_tool(
                    "exec_command", command, input_responses=approve,
                    request_state=asked.request_state, allow_input_required=True,
                )  # fmt: skip
            except MCPError:
                replayed = None  # refused outright: as good as a fresh question
            assert replayed is None or isinstance(replayed, types.InputRequiredResult)
            assert not made.exists()
            answered = await alice.session.call_tool(
                "exec_command", command, input_responses=approve,
                request_state=asked.request_state, allow_input_required=True,
            )  # fmt: skip
            assert isinstance(answered, types.CallToolResult) and not answered.is_error
            assert made.exists()

    anyio.run(main)
