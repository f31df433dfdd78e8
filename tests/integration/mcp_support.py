"""Shared pieces of the `shellgate mcp` tests: rules, the server under test, SDK clients."""

from __future__ import annotations

import contextlib
import os
import re
import select
import subprocess
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2
import mcp.types as types
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from shellgate.client.local_token import local_token_path

from tests.child import stop_child
from tests.integration.test_client_support import router_env
from tests.proc_scan import pids_with
from tests.waiting import eventually

MCP = [sys.executable, "-m", "shellgate.router.cli.main", "mcp"]
# `echo ask-me …` needs the user's approval; `echo forbidden-thing …` never runs.
RULES = """
prefix_rule(pattern=["echo", "ask-me"], decision="prompt")
prefix_rule(pattern=["echo", "forbidden-thing"], decision="forbidden", justification="not here")
"""
# What varies between two runs of the same command in Codex's exec_command output.
_VOLATILE = re.compile(r"^(Chunk ID|Wall time): .*$", re.MULTILINE)


def rules_dir(root: Path) -> Path:
    """A rules folder holding RULES."""
    folder = root / "rules"
    folder.mkdir()
    (folder / "mcp.rules").write_text(RULES)
    return folder


def stable(text: str) -> str:
    """An exec_command output with its chunk id and wall time masked."""
    return _VOLATILE.sub(r"\1: *", text)


def text_of(result: types.CallToolResult) -> str:
    """The one text content of a tool result."""
    assert len(result.content) == 1 and isinstance(result.content[0], types.TextContent)
    return result.content[0].text


def marker() -> str:
    """A unique argv[0] for a long-lived command, to find it with pids_with."""
    return f"mcpmark-{uuid.uuid4().hex[:12]}"


def sleeper(name: str, seconds: int = 60) -> str:
    """A command that stays alive as a process named `name`."""
    return f"exec -a {name} sleep {seconds}"


def wait_gone(name: str, within_s: float = 10.0) -> list[int]:
    """Wait (at most within_s, through `eventually`) until no process named `name` lives;
    the survivors (0 s: the ones alive now)."""
    with contextlib.suppress(AssertionError):
        eventually(lambda: not pids_with(name), f"no process named {name}", within_s)
    return pids_with(name)


class Elicitations:
    """An elicitation callback answering with a fixed action/decision, recording the asks."""

    def __init__(self, action: str = "accept", decision: str = "approved") -> None:
        self.action = action
        self.decision = decision
        self.asked: list[types.ElicitRequestParams] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params)
        content = {"decision": self.decision} if self.action == "accept" else None
        return types.ElicitResult(action=self.action, content=content)  # type: ignore[arg-type]


def bearer_http(token: str | None) -> httpx2.AsyncClient:
    """An HTTP client sending the bearer token (when given) on every request."""
    return create_mcp_http_client(headers={"Authorization": f"Bearer {token}"} if token else None)


def stdio_client(args: list[str], mode: str = "auto", elicit: Elicitations | None = None) -> Client:
    """The SDK client launching `shellgate mcp ARGS` over stdio."""
    params = StdioServerParameters(command=MCP[0], args=[*MCP[1:], *args], env=router_env())
    return Client(params, mode=mode, elicitation_callback=elicit)


@contextlib.asynccontextmanager
async def http_client(
    url: str, token: str | None, mode: str = "auto", elicit: Elicitations | None = None
) -> AsyncIterator[Client]:
    """The SDK client over streamable HTTP (with a bearer token when given)."""
    # The caller of streamable_http_client owns the HTTP client: closed here, even when
    # the test cancels mid-call.
    async with bearer_http(token) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode=mode, elicitation_callback=elicit) as client:
            yield client


@contextlib.asynccontextmanager
async def mcp_client(
    transport: str, args: list[str], mode: str = "auto", elicit: Elicitations | None = None
) -> AsyncIterator[Client]:
    """The SDK client of a `shellgate mcp ARGS` of its own over `transport` (stdio or http).

    Over HTTP the server process ends (SIGTERM) after the client: the end of a 2026-era
    caller's thread.
    """
    if transport == "stdio":
        async with stdio_client(args, mode, elicit) as client:
            yield client
        return
    with http_server(args) as (_, port):
        url = f"http://127.0.0.1:{port}/mcp"
        async with http_client(url, generated_token(port), mode, elicit) as client:
            yield client


def generated_token(port: int) -> str:
    """The bearer token a default `shellgate mcp --http` on `port` generated (its file)."""
    return local_token_path(port, "mcp").read_text().strip()


@contextlib.contextmanager
def http_server(
    args: list[str],
    timeout_s: float = 60.0,
    *,
    bind: str = "127.0.0.1",
    stderr_path: Path | None = None,
) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """`shellgate mcp --http BIND:0 --print-port ARGS` as a real process; SIGTERM at exit.

    Its stderr goes to `stderr_path` when given (else a temporary file).
    """
    log = open(stderr_path, "w+b") if stderr_path else tempfile.TemporaryFile()  # noqa: SIM115
    proc = subprocess.Popen([*MCP, "--http", f"{bind}:0", "--print-port", *args],
                            stdout=subprocess.PIPE, stderr=log, env=router_env())  # fmt: skip
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], timeout_s)
        line = proc.stdout.readline() if ready else b""
        if not line.strip().isdigit():
            proc.kill()
            proc.wait(timeout=10)
            log.seek(0)
            raise RuntimeError(f"no port: {line!r} {log.read().decode(errors='replace')[-2000:]}")
        yield proc, int(line)
    finally:
        stop_child(proc, grace_s=20)
        if proc.stdout is not None:
            proc.stdout.close()
        log.close()


def token_file(root: Path) -> tuple[Path, str]:
    """A 0600 bearer-token file and its token."""
    token = uuid.uuid4().hex
    path = root / "mcp.token"
    path.write_text(token + "\n")
    os.chmod(path, 0o600)
    return path, token
