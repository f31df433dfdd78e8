"""Codex's `sandbox` on the daemon: the bubblewrap sandbox confines processes and fs/* writes.

A real daemon with its `--codex-listen` WebSocket, sent the `sandbox` Codex 0.169.0 sends for
workspace-write and read-only (tests/codex_sandbox_wire.py); needs a working bubblewrap.
"""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path
from typing import Any

import pytest
from shellgate.common.sandbox import sandbox_unavailable_reason

from tests.codex_sandbox_wire import codex_sandbox, entry
from tests.integration.codex_ws_support import Client, codex_daemon, connect_codex, start_params

pytestmark = pytest.mark.skipif(
    bool(sandbox_unavailable_reason()), reason=f"no bubblewrap sandbox: {sandbox_unavailable_reason()}"
)


async def _run(client: Client, name: str, script: str, cwd: Path, sandbox: object) -> tuple[int, str]:
    """Start `sh -c script` under sandbox; its exit code and its output."""
    started = await client.call("process/start", start_params(name, ["/bin/sh", "-c", script], cwd,
                                                        sandbox=sandbox))  # fmt: skip
    assert started["result"] == {"processId": name, "sandboxType": "linuxSeccomp"}, started
    notes = await client.until_closed(name)
    out = b"".join(base64.b64decode(n["params"]["chunk"]) for n in notes
                   if n["method"] == "process/output").decode()  # fmt: skip
    (exited,) = [n for n in notes if n["method"] == "process/exited"]
    return exited["params"]["exitCode"], out


def test_workspace_write_process_writes_only_in_the_workspace(tmp_path: Path) -> None:
    """Inside the workspace: written; outside it, in .git, or a socket: refused by the kernel."""
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    (work / ".git").mkdir()
    # The workspace is the project root only: tmp_path itself is under /tmp (writable), so
    # the outside target is a root-owned path no sandbox may write.
    forbidden = Path("/var/tmp") if Path("/var/tmp").is_dir() else Path("/usr")
    target = forbidden / f"shellgate-codex-sb-{tmp_path.name}"
    sandbox = codex_sandbox(work.as_uri())

    async def main() -> None:
        async with codex_daemon() as (_running, codex):
            client = await connect_codex(codex.port)
            code, out = await _run(client, "in", "echo hi > inside.txt && echo ok", work, sandbox)
            assert (code, out) == (0, "ok\n")
            code, _ = await _run(client, "out", f"echo x > {target}", work, sandbox)
            assert code != 0
            code, _ = await _run(client, "git", "echo x > .git/hooks-x", work, sandbox)
            assert code != 0
            net = "python3 -c 'import socket; socket.socket()' 2>/dev/null"
            code, _ = await _run(client, "net", net, work, sandbox)
            assert code != 0
            ro = codex_sandbox(work.as_uri(), [entry("root", "read")])
            code, _ = await _run(client, "ro", "echo x > ro.txt", work, ro)
            assert code != 0
            await client.ws.close()

    asyncio.run(main())
    assert (work / "inside.txt").read_text() == "hi\n"
    assert not target.exists() and not (work / ".git" / "hooks-x").exists()
    assert not (work / "ro.txt").exists()


def test_sandboxed_fs_writes_are_confined(tmp_path: Path) -> None:
    """fs/* mutations under a sandbox: in the workspace yes; outside, .git, read-only: no."""
    work = tmp_path / "work"
    (work / ".git").mkdir(parents=True)
    outside = tmp_path / "outside.txt"
    (work / "link").symlink_to(tmp_path)  # a way out that must not lead out
    sandbox = codex_sandbox(work.as_uri())
    data = base64.b64encode(b"patched\n").decode()

    async def write(client: Client, path: Path, sb: object) -> dict[str, Any]:
        return await client.call("fs/writeFile",
                                 {"path": path.as_uri(), "dataBase64": data, "sandbox": sb})  # fmt: skip

    async def main() -> None:
        async with codex_daemon() as (_running, codex):
            client = await connect_codex(codex.port)
            assert (await write(client, work / "hello.txt", sandbox))["result"] == {}
            ws_only = codex_sandbox(work.as_uri(), [entry("root", "read"),
                                                   entry("project_roots", "write")])  # fmt: skip
            for path, sb in ((outside, ws_only), (work / "link" / "outside.txt", ws_only),
                             (work / ".git" / "config", sandbox),
                             (work / "ro.txt", codex_sandbox(work.as_uri(), [entry("root", "read")]))):
                refused = await write(client, path, sb)
                assert refused["error"]["code"] == -32600, (path, refused)
            made = await client.call("fs/createDirectory", {"path": (work / "d").as_uri(),
                                                            "recursive": True, "sandbox": sandbox})
            assert made["result"] == {}
            copied = await client.call("fs/copy", {
                "sourcePath": (work / "hello.txt").as_uri(),
                "destinationPath": (tmp_path / "copy.txt").as_uri(), "recursive": False,
                "sandbox": ws_only})  # fmt: skip
            assert copied["error"]["code"] == -32600
            gone = await client.call("fs/remove", {"path": (work / "hello.txt").as_uri(),
                                                   "recursive": False, "force": False,
                                                   "sandbox": ws_only})  # fmt: skip
            assert gone["result"] == {}
            await client.ws.close()

    asyncio.run(main())
    assert (work / "d").is_dir() and not (work / "hello.txt").exists()
    assert not outside.exists() and not (work / ".git" / "config").exists()
    assert not (work / "ro.txt").exists() and not (tmp_path / "copy.txt").exists()
