"""`shellgate-execserver codex-check`: the real codex 0.169.0, the real daemon, real failures.

Each case writes an `environments.toml` as a user would (docs/codex.md), runs the check as a
user would (its own process, `--codex` the pinned binary) and reads what it printed: the
steps that worked on stdout and exit 0, or the one line naming the problem and exit 1.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.child import stop_child
from tests.integration.codex_harness import CODEX_VERSION, codex_version, find_codex

pytestmark = pytest.mark.external
EXECSERVER = [sys.executable, "-m", "shellgate.execserver.cli"]
CHECK_TIMEOUT_S = 90


@pytest.fixture(scope="module")
def codex() -> Path:
    """The pinned codex binary (skips, with the reason, when absent or another version)."""
    found = find_codex()
    if found is None:
        pytest.skip("codex CLI not installed (scripts/setup-test.sh puts 0.169.0 in .tools)")
    version = codex_version(found)
    if version != CODEX_VERSION:
        pytest.skip(f"codex {version} found; codex-check pins {CODEX_VERSION}")
    return found


def check(
    codex: Path | str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`shellgate-execserver codex-check --codex CODEX ARGS…` run to its end."""
    return subprocess.run(
        [*EXECSERVER, "codex-check", "--codex", str(codex), *args], capture_output=True,
        text=True, timeout=CHECK_TIMEOUT_S + 30, stdin=subprocess.DEVNULL, env=env,
    )  # fmt: skip


def remote(**fields: str | list[str] | int) -> str:
    """An environments.toml with one environment, "remote", the default, no local fallback."""
    lines = ['default = "remote"', "include_local = false", "[[environments]]", 'id = "remote"']
    lines += [f"{k} = {json.dumps(v)}" for k, v in fields.items()]
    return "\n".join(lines) + "\n"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "environments.toml"
    path.write_text(text, encoding="utf-8")
    path.chmod(0o600)
    return path


@contextlib.contextmanager
def ws_daemon(*extra: str) -> Iterator[tuple[int, str]]:
    """`serve --codex-listen ws://127.0.0.1:0` (default: its generated token): (port, token)."""
    proc = subprocess.Popen(
        [*EXECSERVER, "serve", "--print-port", "--codex-listen", "ws://127.0.0.1:0", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        _grpc, ws_port = proc.stdout.readline().strip(), proc.stdout.readline().strip()
        assert ws_port.isdigit(), ws_port
        token = ""
        if "--no-local-token" not in extra:
            token = subprocess.run(
                [*EXECSERVER, "token", "--port", ws_port], capture_output=True, text=True,
                timeout=60, check=True,
            ).stdout.strip()  # fmt: skip
        yield int(ws_port), token
    finally:
        stop_child(proc)
        if proc.stdout is not None:
            proc.stdout.close()


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    """The failure line: exit 1 and exactly one stderr line."""
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith("shellgate-execserver codex-check: "), lines[0]
    return lines[0]


def assert_passed(done: subprocess.CompletedProcess[str]) -> list[str]:
    """Exit 0, nothing on stderr, and every step reported; the stdout lines."""
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    for step in ("codex: codex-cli 0.169.0", 'environment: "remote"', "reachable: ",
                 "authenticated: ", "ran remotely: ", 'ok: Codex runs its commands on '
                 'environment "remote"'):  # fmt: skip
        assert any(line.startswith(step) for line in lines), (step, done.stdout)
    ran = next(line for line in lines if line.startswith("ran remotely: "))
    assert f"on host {socket.gethostname()!r}, exit code 0" in ran, ran
    return lines


def test_a_websocket_daemon_with_its_token_passes(codex: Path, tmp_path: Path) -> None:
    """docs/codex.md's ws set-up (token from `shellgate-execserver token --port`) passes."""
    with ws_daemon() as (port, token):
        path = write(tmp_path, remote(url=f"ws://127.0.0.1:{port}", auth_bearer_token=token))
        lines = assert_passed(check(codex, "--environments", str(path)))
    assert "authenticated: the bearer token was accepted; initialize answered (session " in (
        "\n".join(lines)
    )
    assert not any(line.startswith("note:") for line in lines), lines


def test_a_codex_stdio_program_passes(codex: Path, tmp_path: Path) -> None:
    """`program = …codex-stdio` passes; no token is involved.

    The file leaves `include_local` out (Codex's default, true): the check still runs the
    command on the environment (its copy pins include_local = false) and notes the risk.
    """
    text = remote(program=EXECSERVER[0], args=[*EXECSERVER[1:], "codex-stdio"])
    path = write(tmp_path, text.replace("include_local = false\n", ""))
    lines = assert_passed(check(codex, "--environments", str(path)))
    assert "authenticated: not needed (a stdio program: the pipe is Codex's own)" in lines
    assert any(line.startswith("note: include_local is not false") for line in lines), lines


def test_a_stopped_daemon_is_named(codex: Path, tmp_path: Path) -> None:
    """The daemon was stopped (its token file with it): connection refused, in one line."""
    with ws_daemon() as (port, token):
        pass
    path = write(tmp_path, remote(url=f"ws://127.0.0.1:{port}", auth_bearer_token=token))
    line = one_line(check(codex, "--environments", str(path)))
    assert f"nothing listens on 127.0.0.1:{port} (connection refused)" in line, line


def test_a_wrong_token_is_named(codex: Path, tmp_path: Path) -> None:
    """A stale or mistyped auth_bearer_token: 401, and how to get the current one."""
    with ws_daemon() as (port, token):
        path = write(tmp_path, remote(url=f"ws://127.0.0.1:{port}", auth_bearer_token=token + "x"))
        line = one_line(check(codex, "--environments", str(path)))
    assert "refused the auth_bearer_token (401)" in line, line
    assert f"shellgate-execserver token --port {port}" in line, line


def test_a_missing_token_is_named(codex: Path, tmp_path: Path) -> None:
    """No auth_bearer_token at all: 401, and the line to add."""
    with ws_daemon() as (port, _token):
        path = write(tmp_path, remote(url=f"ws://127.0.0.1:{port}"))
        line = one_line(check(codex, "--environments", str(path)))
    assert "requires a bearer token (401) and the entry has no auth_bearer_token" in line, line


def test_a_host_the_listener_does_not_answer_to_is_named(codex: Path, tmp_path: Path) -> None:
    """A url naming the host by another name that reaches loopback: 421, the Host refused."""
    name = socket.gethostname()
    try:
        address = socket.gethostbyname(name)
    except OSError:
        address = ""
    if not address.startswith("127.") or name.lower() == "localhost":
        pytest.skip(f"this host's name ({name}) does not resolve to a loopback address")
    with ws_daemon("--no-local-token") as (port, _token):
        path = write(tmp_path, remote(url=f"ws://{name}:{port}"))
        line = one_line(check(codex, "--environments", str(path)))
    assert f"refused the Host header {name}:{port} (421)" in line, line


def test_the_default_file_is_codex_home_s(codex: Path, tmp_path: Path) -> None:
    """Without --environments, `$CODEX_HOME/environments.toml` (what Codex 0.169 reads)."""
    home = tmp_path / "codex-home"
    home.mkdir()
    write(home, remote(program=EXECSERVER[0], args=[*EXECSERVER[1:], "codex-stdio"]))
    done = check(codex, env={**os.environ, "CODEX_HOME": str(home)})
    assert_passed(done)
    assert f"from {home / 'environments.toml'}" in done.stdout
    empty = tmp_path / "empty-home"
    empty.mkdir()
    line = one_line(check(codex, env={**os.environ, "CODEX_HOME": str(empty)}))
    assert f"no environments file: {empty / 'environments.toml'} does not exist" in line, line


def test_no_credential_of_the_user_reaches_the_check_s_codex(codex: Path, tmp_path: Path) -> None:
    """The user's auth.json/config and OPENAI/CODEX keys stay out: a stdio program sees its env."""
    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "auth.json").write_text('{"OPENAI_API_KEY": "sk-from-auth-json"}')
    (home / "config.toml").write_text('model_provider = "elsewhere"\n')
    seen = tmp_path / "seen-env"
    program = f"env >> {seen}; exec {' '.join(EXECSERVER)} codex-stdio"
    write(home, remote(program="/bin/sh", args=["-c", program]))
    env = {**os.environ, "CODEX_HOME": str(home), "OPENAI_API_KEY": "sk-user",
           "CODEX_API_KEY": "sk-codex-user"}  # fmt: skip
    assert_passed(check(codex, env=env))
    spawned = seen.read_text()
    assert spawned.count("SHELLGATE_TEST_MARK=") == 2  # the check's probe, then codex's turn
    assert "sk-user" not in spawned and "sk-codex-user" not in spawned
    homes = {line for line in spawned.splitlines() if line.startswith("CODEX_HOME=")}
    assert f"CODEX_HOME={home}" not in homes and len(homes) == 1, homes


def test_environments_file_mistakes_are_named_before_any_turn(codex: Path, tmp_path: Path) -> None:
    """Keys Codex 0.169 refuses, a default naming nothing, no default: one line each."""
    cases = {
        remote(url="ws://127.0.0.1:1", bogus="x"): "unknown field `bogus`",
        'default = "gone"\n[[environments]]\nid = "remote"\nurl = "ws://127.0.0.1:1"\n':
            "default environment `gone` is not configured",
        '[[environments]]\nid = "remote"\nurl = "ws://127.0.0.1:1"\n': "sets no `default`",
        remote(url="ws://127.0.0.1:1", program="x"): "must set exactly one of url or program",
        "default = [": "not valid TOML",
    }  # fmt: skip
    for text, problem in cases.items():
        line = one_line(check(codex, "--environments", str(write(tmp_path, text))))
        assert problem in line, (text, line)


def test_codex_missing_or_another_version_is_named(tmp_path: Path) -> None:
    """No codex there, or a codex of another version: named before anything else."""
    path = write(tmp_path, remote(url="ws://127.0.0.1:1"))
    line = one_line(check(tmp_path / "no-codex", "--environments", str(path)))
    assert f"codex not found: {tmp_path / 'no-codex'} is not an executable file" in line
    other = tmp_path / "codex"
    other.write_text("#!/bin/sh\necho codex-cli 0.170.0\n")
    other.chmod(0o755)
    line = one_line(check(other, "--environments", str(path)))
    assert "is codex-cli 0.170.0; shellgate-execserver speaks" in line and CODEX_VERSION in line


def test_a_program_that_never_answers_is_bounded(codex: Path, tmp_path: Path) -> None:
    """A stdio program that never answers: named within --timeout (plus the stop grace)."""
    path = write(tmp_path, remote(program="sleep", args=["60"]))
    started = time.monotonic()
    line = one_line(check(codex, "--environments", str(path), "--timeout", "2"))
    assert time.monotonic() - started < 20
    assert "`sleep 60` gave no answer to initialize" in line, line


def test_usage_errors_exit_2(codex: Path, tmp_path: Path) -> None:
    """An --environment the file lacks, or a --timeout that is not positive: exit 2."""
    path = write(tmp_path, remote(url="ws://127.0.0.1:1"))
    done = check(codex, "--environments", str(path), "--environment", "nosuch")
    assert done.returncode == 2 and "has no such environment (it has: remote)" in done.stderr
    done = check(codex, "--environments", str(path), "--timeout", "0")
    assert done.returncode == 2 and "--timeout must be a positive" in done.stderr
