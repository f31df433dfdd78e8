"""What a user installs is what works: `pip install .` alone, then each extra alone.

A fresh venv gets the shellgate wheel built from this checkout and nothing else (no test
extra): the router serves and `shellgate call` runs a command through it, the exec-server's
Codex door (`--codex-listen`, `codex-stdio`) opens, and each optional feature whose extra
is missing refuses with one line naming the `pip install` — never a traceback — and works
once just that extra is installed.
"""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import urllib.request
import venv
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.shared_support import REDIS_SERVER, redis_server, seal_key_file
from tests.paths import REPO_ROOT

pytestmark = pytest.mark.slow


def _env(venv_dir: Path) -> dict[str, str]:
    # PYTHONPATH points at the checkout: the venv must see only what it installed.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MYPYPATH")}
    env["PATH"] = f"{venv_dir / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _run(args: list[str], venv_dir: Path, cwd: Path, timeout: float = 600) -> str:
    proc = subprocess.run(args, cwd=cwd, env=_env(venv_dir), capture_output=True, text=True,
                          timeout=timeout, check=False)  # fmt: skip
    assert proc.returncode == 0, (args, proc.stdout[-3000:], proc.stderr[-3000:])
    return proc.stdout


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """(the venv, the wheel it was installed from): `pip install` of the wheel, no extra."""
    root = tmp_path_factory.mktemp("plain-install")
    dist = root / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist),
                    str(REPO_ROOT)], check=True, capture_output=True, timeout=600)  # fmt: skip
    [wheel] = dist.glob("shellgate-*.whl")
    venv_dir = root / "venv"
    venv.EnvBuilder(with_pip=True).create(venv_dir)
    _run([str(venv_dir / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)],
         venv_dir, root)  # fmt: skip
    yield venv_dir, wheel


class _Started:
    """A daemon of the venv started with `--print-port`; stopped on exit."""

    def __init__(self, args: list[str], venv_dir: Path, cwd: Path) -> None:
        self.proc = subprocess.Popen(
            args, cwd=cwd, env=_env(venv_dir), stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], 60)
        line = self.proc.stdout.readline().strip() if ready else b""
        if not line.isdigit():
            err = self.stderr()
            self.stop()
            raise AssertionError(f"{args} did not start: {err[-3000:]}")
        self.port = int(line)

    def stderr(self) -> str:
        assert self.proc.stderr is not None
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(15)
        return self.proc.stderr.read().decode(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()

    def __enter__(self) -> _Started:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _serve(venv_dir: Path, cwd: Path, *extra: str) -> _Started:
    bin_dir = venv_dir / "bin"
    return _Started([str(bin_dir / "shellgate"), "serve", "--listen", "127.0.0.1:0",
                     "--print-port", *extra], venv_dir, cwd)  # fmt: skip


def test_the_router_serves_and_shellgate_call_runs_a_command(
    plain: tuple[Path, Path], tmp_path: Path
) -> None:
    venv_dir, _ = plain
    with _serve(venv_dir, tmp_path) as router:
        out = _run([str(venv_dir / "bin" / "shellgate"), "call", "--target",
                    f"127.0.0.1:{router.port}", "--cmd", "echo hello"], venv_dir, tmp_path)  # fmt: skip
    assert out.strip().endswith("hello"), out


def test_the_codex_door_opens_over_ws_and_stdio(plain: tuple[Path, Path], tmp_path: Path) -> None:
    venv_dir, _ = plain
    bin_dir = venv_dir / "bin"
    proc = subprocess.Popen(
        [str(bin_dir / "shellgate-execserver"), "serve", "--listen", "127.0.0.1:0",
         "--codex-listen", "ws://127.0.0.1:0", "--root", str(tmp_path)],
        cwd=tmp_path, env=_env(venv_dir), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        seen = b""
        while b"codex exec-server protocol listening" not in seen:
            ready, _, _ = select.select([proc.stderr], [], [], 30)
            assert ready and proc.poll() is None, seen.decode(errors="replace")
            seen += proc.stderr.readline()
        port = int(re.findall(rb"ws://127\.0\.0\.1:(\d+)", seen)[-1])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=10) as reply:
            assert reply.status == 200
    finally:
        proc.terminate()
        proc.wait(15)
        if proc.stderr is not None:
            proc.stderr.close()
    # stdio: one JSON-RPC request in, its answer out (NDJSON).
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"clientName": "plain-install-test"}}  # fmt: skip
    stdio = subprocess.run(
        [str(bin_dir / "shellgate-execserver"), "codex-stdio", "--root", str(tmp_path)],
        input=json.dumps(initialize) + "\n", cwd=tmp_path, env=_env(venv_dir),
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert "Traceback" not in stdio.stderr, stdio.stderr
    answer = json.loads(stdio.stdout.splitlines()[0])
    assert answer["id"] == 1 and "result" in answer, answer


def _refuses(args: list[str], venv_dir: Path, cwd: Path, extra: str) -> None:
    proc = subprocess.run(args, cwd=cwd, env=_env(venv_dir), capture_output=True, text=True,
                          timeout=60, check=False, stdin=subprocess.DEVNULL)  # fmt: skip
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, proc.stderr
    assert f"pip install 'shellgate[{extra}]'" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


@pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")
def test_each_optional_feature_names_its_extra_then_works_with_just_that_extra(
    plain: tuple[Path, Path], tmp_path: Path
) -> None:
    venv_dir, wheel = plain
    bin_dir = venv_dir / "bin"
    pip = [str(bin_dir / "python"), "-m", "pip", "install", "-q"]
    serve = [str(bin_dir / "shellgate"), "serve", "--listen", "127.0.0.1:0", "--print-port"]
    with redis_server() as url:
        redis_toml = tmp_path / "redis.toml"
        redis_toml.write_text(
            f'redis_url = "{url}"\nshared_state_key_file = "{seal_key_file(tmp_path)}"\n'
        )
        features = {
            "redis": redis_toml,
            "console": tmp_path / "console.toml",
            "otel": tmp_path / "otel.toml",
        }
        features["console"].write_text('console_listen = "127.0.0.1:0"\n')
        features["otel"].write_text('otel_endpoint = "http://127.0.0.1:9"\n')
        for extra, config in features.items():
            _refuses([*serve, "--config", str(config)], venv_dir, tmp_path, extra)
            _run([*pip, f"{wheel}[{extra}]"], venv_dir, tmp_path)
            with _serve(venv_dir, tmp_path, "--config", str(config)) as router:
                assert router.port > 0
    # The MCP front: refused without its extra, then answers `initialize` over stdio.
    _refuses([str(bin_dir / "shellgate"), "mcp"], venv_dir, tmp_path, "mcp")
    _run([*pip, f"{wheel}[mcp]"], venv_dir, tmp_path)
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "plain-install-test", "version": "1"}}}  # fmt: skip
    mcp = subprocess.Popen(
        [str(bin_dir / "shellgate"), "mcp"], cwd=tmp_path, env=_env(venv_dir),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        assert mcp.stdin is not None and mcp.stdout is not None
        mcp.stdin.write((json.dumps(initialize) + "\n").encode())
        mcp.stdin.flush()
        ready, _, _ = select.select([mcp.stdout], [], [], 60)
        assert ready, "shellgate mcp did not answer initialize"
        answer = json.loads(mcp.stdout.readline())
        assert answer["id"] == 1 and answer["result"]["serverInfo"], answer
    finally:
        mcp.terminate()
        mcp.wait(30)
        for pipe in (mcp.stdin, mcp.stdout):
            if pipe is not None:
                pipe.close()


def test_a_real_codex_turn_runs_on_the_plain_daemon_over_ws_and_stdio(
    plain: tuple[Path, Path], tmp_path: Path
) -> None:
    # The Codex conformance turn in the plain venv: `codex-check` (product code) runs one
    # scripted turn of the real codex 0.169.0 on the venv's own daemon, over ws (with the
    # daemon's generated token) and over stdio (the venv's `codex-stdio` as the program).
    from tests.integration.codex_harness import CODEX_VERSION, codex_version, find_codex

    codex = find_codex()
    if codex is None or codex_version(codex) != CODEX_VERSION:
        pytest.skip(
            f"codex {CODEX_VERSION} not installed (scripts/setup-test.sh puts it in .tools)"
        )
    venv_dir, _ = plain
    execserver = str(venv_dir / "bin" / "shellgate-execserver")
    header = 'default = "remote"\ninclude_local = false\n[[environments]]\nid = "remote"\n'

    def check(environments: str) -> str:
        path = tmp_path / "environments.toml"
        path.write_text(header + environments)
        path.chmod(0o600)
        return _run([execserver, "codex-check", "--codex", str(codex), "--environments",
                     str(path)], venv_dir, tmp_path, timeout=180)  # fmt: skip

    daemon = subprocess.Popen(
        [execserver, "serve", "--print-port", "--listen", "127.0.0.1:0",
         "--codex-listen", "ws://127.0.0.1:0", "--root", str(tmp_path)],
        cwd=tmp_path, env=_env(venv_dir), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        text=True,
    )  # fmt: skip
    try:
        assert daemon.stdout is not None
        _grpc, ws_port = daemon.stdout.readline().strip(), daemon.stdout.readline().strip()
        token = _run([execserver, "token", "--port", ws_port], venv_dir, tmp_path).strip()
        out = check(f'url = "ws://127.0.0.1:{ws_port}"\nauth_bearer_token = "{token}"\n')
        assert "ok: Codex runs its commands on environment" in out, out
    finally:
        daemon.terminate()
        daemon.wait(15)
        if daemon.stdout is not None:
            daemon.stdout.close()
    out = check(f'program = "{execserver}"\nargs = ["codex-stdio", "--root", "{tmp_path}"]\n')
    assert "ok: Codex runs its commands on environment" in out, out
