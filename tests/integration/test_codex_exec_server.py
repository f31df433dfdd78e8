"""Conformance: an unmodified `codex exec` 0.169.0 runs a scripted turn on shellgate-execserver.

Codex reaches the daemon through `$CODEX_HOME/environments.toml` (a `ws://` url with the
daemon's local token as `auth_bearer_token`, or a stdio `program`); the scripted model on 127.0.0.1 asks for a short command, a long-running tty one
fed by write_stdin, a poll of a command still running, a failing command and an apply_patch.
The model-facing outputs Codex sends back must equal those of the same script run by Codex
against its own `codex exec-server` (chunk ids, wall times, session ids and paths normalised).
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.codex_harness import (
    CODEX_VERSION,
    ScriptedResponses,
    codex_env,
    codex_version,
    custom_call,
    final_message,
    find_codex,
    function_call,
    stream,
    write_config,
)
from tests.sshd import Sshd, sshd_server  # noqa: F401  (session fixture)

RUN_TIMEOUT_S = 120
PATCH = "*** Begin Patch\n*** Add File: hello.txt\n+patched line\n*** End Patch\n"
# (tool, args); "__SID__" becomes the session id of the last running command.
SCRIPT: list[tuple[str, Any]] = [
    # stdout and stderr are two pipes: the pause orders them (else either may come first).
    ("exec_command", {"cmd": "echo hello; sleep 0.3; echo err >&2"}),
    ("exec_command", {"cmd": "read x; echo got $x; sleep 0.3; echo end", "tty": True,
                      "yield_time_ms": 300}),
    ("write_stdin", {"session_id": "__SID__", "chars": "abc\n", "yield_time_ms": 3000}),
    ("exec_command", {"cmd": "sleep 1; echo late", "yield_time_ms": 100}),
    ("write_stdin", {"session_id": "__SID__", "chars": "", "yield_time_ms": 5000}),
    ("exec_command", {"cmd": "ls /nonexistent-shellgate; exit 3"}),
    ("apply_patch", PATCH),
    ("exec_command", {"cmd": "cat hello.txt; pwd"}),
]


def _outputs(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [i for i in body.get("input", [])
            if isinstance(i, dict) and str(i.get("type", "")).endswith("call_output")]  # fmt: skip


def _text(item: dict[str, Any]) -> str:
    output = item.get("output")
    return output if isinstance(output, str) else json.dumps(output)


def _scripted(script: list[tuple[str, Any]]) -> Callable[[dict[str, Any]], list[dict[str, Any]]]:
    """The scripted model: the next call once the previous one's output is back, then done."""

    def answer(body: dict[str, Any]) -> list[dict[str, Any]]:
        outs = _outputs(body)
        if len(outs) >= len(script):
            return stream(final_message())
        tool, args = script[len(outs)]
        call_id = f"c{len(outs) + 1}"
        if tool == "apply_patch":
            return stream(custom_call(tool, call_id, args))
        if args.get("session_id") == "__SID__":
            found = re.search(r"session ID (\d+)", _text(outs[-1])) if outs else None
            args = {**args, "session_id": int(found.group(1)) if found else 0}
        return stream(function_call(tool, call_id, args))

    return answer


def _normalise(text: str, cwd: Path) -> str:
    text = text.replace(str(cwd), "<cwd>")
    text = re.sub(r"Chunk ID: \w+", "Chunk ID: <id>", text)
    text = re.sub(r"Wall time: [\d.]+ seconds", "Wall time: <t> seconds", text)
    return re.sub(r"session ID \d+", "session ID <sid>", text)


def run_turn(
    codex: Path,
    environment: Callable[[Path], str],
    script: list[tuple[str, Any]] = SCRIPT,
    sandbox_mode: str = "danger-full-access",
) -> list[str]:
    """Run the scripted turn with `environments.toml` from `environment(cwd)`; outputs."""
    # Same-length paths in every run: Codex's token counts include the cwd's length.
    root = Path(tempfile.mkdtemp(prefix="codex-run-"))
    home, cwd = root / "home", root / "work"
    cwd.mkdir(parents=True)
    os.chmod(root, 0o755)
    os.chmod(cwd, 0o777)  # an SSH login user other than ours works in it too
    server = ScriptedResponses(_scripted(script))
    try:
        write_config(home, server.port, 'approval_policy = "never"\n'
                     f'sandbox_mode = "{sandbox_mode}"\n', model="gpt-5.5")  # fmt: skip
        (home / "environments.toml").write_text(environment(cwd), encoding="utf-8")
        done = subprocess.run(
            [str(codex), "exec", "--skip-git-repo-check", "-C", str(cwd), "run the script"],
            env=codex_env(home), capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-4000:]
        assert server.bodies, "codex never called the scripted model"
        outs = _outputs(server.bodies[-1])
    finally:
        server.close()
        shutil.rmtree(root, ignore_errors=True)
    assert [o["call_id"] for o in outs] == [f"c{n}" for n in range(1, len(script) + 1)]
    return [_normalise(_text(o), cwd) for o in outs]


def _remote(**fields: str | list[str]) -> str:
    lines = ['default = "remote"', "include_local = false", "[[environments]]", 'id = "remote"']
    lines += [f"{k} = {json.dumps(v)}" for k, v in fields.items()]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def codex() -> Path:
    """The pinned codex binary (skips when it is absent or another version)."""
    found = find_codex()
    if found is None:
        pytest.skip("codex CLI not installed (npm i @openai/codex@0.169.0 into .tools)")
    version = codex_version(found)
    if version != CODEX_VERSION:
        pytest.skip(f"codex {version} found; this conformance suite pins {CODEX_VERSION}")
    return found


def _start(argv: list[str], lines: int) -> tuple[subprocess.Popen[str], list[str]]:
    """A daemon that prints `lines` startup lines on stdout (ports or its URL)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    return proc, [proc.stdout.readline().strip() for _ in range(lines)]


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=15)
    if proc.stdout is not None:
        proc.stdout.close()


@pytest.fixture(scope="module")
def reference(codex: Path) -> Iterator[list[str]]:
    """The outputs with Codex's own `codex exec-server` (the oracle)."""
    proc, (url,) = _start([str(codex), "exec-server", "--listen", "ws://127.0.0.1:0"], 1)
    try:
        assert url.startswith("ws://127.0.0.1:"), url
        yield run_turn(codex, lambda _cwd: _remote(url=url))
    finally:
        _stop(proc)


def _daemon(extra: list[str]) -> list[str]:
    return [sys.executable, "-m", "shellgate.execserver.cli", *extra]


@contextlib.contextmanager
def ws_daemon() -> Iterator[tuple[str, str]]:
    """`serve --codex-listen ws://127.0.0.1:0` with its default credentials: (url, token).

    The token is the daemon's generated local token, read as docs/codex.md says to
    (`shellgate-execserver token --port`); without it the listener refuses Codex.
    """
    proc, (_grpc_port, ws_port) = _start(
        _daemon(["serve", "--print-port", "--codex-listen", "ws://127.0.0.1:0"]), 2
    )
    try:
        token = subprocess.run(
            _daemon(["token", "--port", ws_port]), capture_output=True, text=True, timeout=60,
            check=True,
        ).stdout.strip()  # fmt: skip
        yield f"ws://127.0.0.1:{ws_port}", token
    finally:
        _stop(proc)


def test_reference_turn_ran_every_tool(reference: list[str]) -> None:
    """The oracle itself ran the script (so equality below is about something)."""
    assert "Process exited with code 0" in reference[0] and "hello\nerr" in reference[0]
    assert "Process running with session ID <sid>" in reference[1]
    assert "got abc" in reference[2] and "late" in reference[4]
    assert "Process exited with code 3" in reference[5]
    assert "A hello.txt" in reference[6]
    assert "patched line\n<cwd>" in reference[7]


def test_websocket_turn_equals_codex_exec_server(codex: Path, reference: list[str]) -> None:
    """`serve --codex-listen ws://…` (token required): the same outputs as Codex's own."""
    with ws_daemon() as (url, token):
        got = run_turn(codex, lambda _cwd: _remote(url=url, auth_bearer_token=token))
    assert got == reference


def test_websocket_without_the_token_runs_nothing(codex: Path, tmp_path: Path) -> None:
    """An `environments.toml` without `auth_bearer_token`: refused at the handshake."""
    marker = tmp_path / "ran"
    script: list[tuple[str, Any]] = [("exec_command", {"cmd": f"touch {marker}"})]
    with ws_daemon() as (url, _token):
        (out,) = run_turn(codex, lambda _cwd: _remote(url=url), script)
    assert not marker.exists()
    assert "No usable execution environment" in out, out


def test_stdio_turn_equals_codex_exec_server(codex: Path, reference: list[str]) -> None:
    """`program = shellgate-execserver codex-stdio`: the same outputs."""
    argv = _daemon(["codex-stdio"])
    got = run_turn(codex, lambda _cwd: _remote(program=argv[0], args=argv[1:]))
    assert got == reference


def test_ssh_backend_turn_equals_codex_exec_server(
    codex: Path, reference: list[str], sshd_server: Sshd, tmp_path: Path  # noqa: F811
) -> None:
    """The same turn over stdio with the daemon's SSH backend (a real sshd on loopback)."""
    toml = ssh_daemon_environment(sshd_server, tmp_path)
    got = run_turn(codex, lambda _cwd: toml)
    assert got == reference


def ssh_daemon_environment(sshd: Sshd, tmp_path: Path) -> str:
    """environments.toml for `codex-stdio` with the SSH backend to `sshd`."""
    ssh = sshd.config()
    config = tmp_path / "execserver.toml"
    config.write_text(
        'backend = "ssh"\n[ssh]\n'
        f'host = "127.0.0.1"\nport = {ssh.port}\nuser = "{ssh.user}"\n'
        f'key_file = "{ssh.key_file}"\nknown_hosts_file = "{ssh.known_hosts_file}"\n',
        encoding="utf-8",
    )
    argv = _daemon(["codex-stdio", "--config", str(config)])
    # Remote commands inherit the daemon's environment (Codex's envPolicy): its HOME must
    # be the SSH login user's, as it would be for a daemon started by that user over ssh.
    home = pwd.getpwnam(ssh.user).pw_dir
    return _remote(program=argv[0], args=argv[1:]) + f"env = {{ HOME = {json.dumps(home)} }}\n"
