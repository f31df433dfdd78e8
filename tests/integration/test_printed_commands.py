"""What shellgate itself tells a newcomer to run, run as printed: the start banner's `try:`
line for each way a router authenticates (generated token, token file, TLS, mTLS), and the
`start here:` lines of `shellgate --help` on a fresh HOME."""

from __future__ import annotations

import os
import re
import select
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.certs import TlsFiles, make_tls
from tests.paths import REPO_ROOT
from tests.router_harness import router_subprocess

SHELLGATE = [sys.executable, "-m", "shellgate.router.cli.main"]
TOKEN = "printed-commands-token-0123456789"


def _banner(proc: subprocess.Popen[bytes]) -> str:
    """The banner the router wrote to stderr before its port (already in the pipe)."""
    assert proc.stderr is not None
    text = b""
    while select.select([proc.stderr], [], [], 0.5)[0]:
        chunk = os.read(proc.stderr.fileno(), 65536)
        if not chunk:
            break
        text += chunk
        if b"  try: " in text and text.endswith(b"\n"):
            break
    return text.decode()


def _try_line(banner: str) -> tuple[str, str]:
    """(the `try:` command, its placeholder note or "")."""
    found = re.search(r"^  try: (.*)\n(?:       \((.*)\)\n)?", banner, re.M)
    assert found is not None, banner
    return found[1], found[2] or ""


def _config(tmp_path: Path, case: str, tls: TlsFiles) -> dict[str, Any]:
    tokens = tmp_path / "router.tokens"
    tokens.write_text(f"alice {TOKEN}\n")
    tokens.chmod(0o600)
    server_tls = {"tls_cert_file": tls.server_cert, "tls_key_file": tls.server_key}
    return {
        "generated": {},
        "token_file": {"token_file": str(tokens)},
        "tls": server_tls,
        "mtls": {**server_tls, "tls_client_ca_file": tls.ca_cert},
        "tls_and_token_file": {**server_tls, "token_file": str(tokens)},
    }[case]


def _toml(values: dict[str, Any]) -> str:
    lines = [f'{key} = "{value}"' for key, value in values.items()]
    return "\n".join([*lines, "[defaults]", 'permission_profile = "danger-full-access"', ""])


# case -> (flags the try line carries after --target, placeholder -> TlsFiles field or TOKEN)
CASES = {
    "generated": ("", {}),
    "token_file": ("--token TOKEN", {"TOKEN": TOKEN}),
    "tls": ("--tls-ca CA.pem", {"CA.pem": "ca_cert"}),
    "mtls": ("--tls-ca CA.pem --tls-cert CLIENT.crt --tls-key CLIENT.key",
             {"CA.pem": "ca_cert", "CLIENT.crt": "client_cert", "CLIENT.key": "client_key"}),
    "tls_and_token_file": ("--token TOKEN --tls-ca CA.pem", {"TOKEN": TOKEN, "CA.pem": "ca_cert"}),
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_the_banner_try_line_works_as_printed(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "xdg"))
    tls = make_tls(tmp_path / "tls")
    config = tmp_path / "router.toml"
    config.write_text(_toml(_config(tmp_path, case, tls)))
    flags, placeholders = CASES[case]
    with router_subprocess(["--config", str(config)], local_token=True) as (proc, port):
        command, note = _try_line(_banner(proc))
        expected = " ".join(filter(None, [f"--target 127.0.0.1:{port}", flags]))
        assert command == f'shellgate call {expected} --cmd "echo hello"'
        for placeholder, value in placeholders.items():
            assert f"{placeholder.split('.')[0]}" in note, note  # explained under the line
            real = value if placeholder == "TOKEN" else getattr(tls, value)
            command = command.replace(placeholder, real)
        words = shlex.split(command)
        done = subprocess.run([*SHELLGATE, *words[1:]], capture_output=True, text=True,
                              timeout=60, stdin=subprocess.DEVNULL, check=False)  # fmt: skip
    assert done.returncode == 0, (command, done.stderr)
    assert done.stdout.rstrip().endswith("hello"), done.stdout


def _start_here_lines() -> list[str]:
    """The `start here:` lines of `shellgate --help`, comments dropped."""
    done = subprocess.run([*SHELLGATE, "--help"], capture_output=True, text=True, timeout=30)
    section = done.stdout.split("start here:\n", 1)[1]
    lines = [re.sub(r"\s+#.*$", "", line).strip() for line in section.splitlines()]
    return [line for line in lines if line]


@pytest.fixture
def fresh_home(tmp_path: Path) -> Iterator[dict[str, str]]:
    """An environment like a new user's: empty HOME, private runtime dir, `shellgate` on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "shellgate"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m shellgate.router.cli.main "$@"\n')
    shim.chmod(0o755)
    (tmp_path / "home").mkdir()
    yield {**os.environ, "HOME": str(tmp_path / "home"), "XDG_RUNTIME_DIR": str(tmp_path / "xdg"),
           "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}  # fmt: skip


def test_every_start_here_serve_line_starts_a_router_as_printed(
    fresh_home: dict[str, str],
) -> None:
    from shellgate.common.sandbox import sandbox_unavailable_reason

    lines = [line for line in _start_here_lines() if "--detach" not in line]
    # `serve --detach && shellgate call …` is the README's run command: test_first_run.py.
    assert len(lines) == 3, lines
    for line in lines:
        if "--sandbox" not in line and sandbox_unavailable_reason():
            continue  # workspace-write needs bubblewrap: test_first_run checks the refusal
        # On a free port instead of 50051; otherwise exactly the printed line.
        proc = subprocess.Popen(["sh", "-c", f"{line} --listen 127.0.0.1:0 --print-port"],
                                env=fresh_home, cwd=REPO_ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                start_new_session=True)  # fmt: skip
        try:
            assert proc.stdout is not None and proc.stderr is not None
            ready = select.select([proc.stdout], [], [], 60)[0]
            port = proc.stdout.readline().strip() if ready else b""
            if not port.isdigit():
                proc.wait(10)
                raise AssertionError(f"{line!r} did not start: {proc.stderr.read().decode()}")
            if "--rules-dir" in line:
                rules = Path(fresh_home["HOME"]) / ".codex" / "rules"
                assert f"rules: 0 .rules file(s) from {rules}" in _banner(proc)
            # The router the line started, stopped by its pid file: sh ends with its exit code.
            stop = subprocess.run([*SHELLGATE, "stop", "--target", f"127.0.0.1:{port.decode()}"],
                                  env=fresh_home, capture_output=True, text=True, timeout=60)  # fmt: skip
            assert stop.returncode == 0 and "stopped" in stop.stdout, stop
            assert proc.wait(30) == 0, line
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            for pipe in (proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
