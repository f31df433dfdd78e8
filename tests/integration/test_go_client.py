"""The Go example (client/examples/go) built and run exactly as its README says — the
README's own lines, from the repository root — against a default router, whose generated
token the example finds itself; the committed stubs are fresh (buf generate with the local
protoc-gen-go plugins).

Toolchain: Debian's `golang-go` with its packaged grpc-go and protobuf sources, built in
GOPATH mode by the example's build.sh (the Go module proxy is not reachable from this
project's machines); scripts/setup-test.sh installs them. Skipped with the reason when any
piece is missing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.paths import REPO_ROOT
from tests.router_harness import router_subprocess

pytestmark = [pytest.mark.external, pytest.mark.slow]

GO = shutil.which("go")
GOCODE = Path("/usr/share/gocode")  # Debian's golang-*-dev sources
EXAMPLE = REPO_ROOT / "client" / "examples" / "go"
DEFAULT_TARGET = "127.0.0.1:50051"
BUF = os.environ.get("SHELLGATE_BUF") or str(REPO_ROOT / ".tools/node_modules/.bin/buf")


def _missing_toolchain() -> str | None:
    if GO is None:
        return "go not installed (apt-get install golang-go)"
    for package in ("google.golang.org/grpc", "google.golang.org/protobuf"):
        if not (GOCODE / "src" / package).is_dir():
            return f"{package} sources missing under {GOCODE} (golang-google-*-dev)"
    return None


def test_go_stubs_are_fresh(tmp_path: Path) -> None:
    if not (Path(BUF).exists() and shutil.which("protoc-gen-go")
            and shutil.which("protoc-gen-go-grpc")):  # fmt: skip
        pytest.skip("buf, protoc-gen-go or protoc-gen-go-grpc not installed")
    plugins = [{"local": name, "out": str(tmp_path), "opt": "paths=source_relative"}
               for name in ("protoc-gen-go", "protoc-gen-go-grpc")]  # fmt: skip
    template = json.dumps({"version": "v2", "plugins": plugins})
    subprocess.run([BUF, "generate", "--template", template], cwd=REPO_ROOT / "protos",
                   check=True, capture_output=True, timeout=120)  # fmt: skip
    committed_dir = REPO_ROOT / "client" / "go" / "shellgate" / "v1"
    fresh_dir = tmp_path / "shellgate" / "v1"
    fresh = {p.name: p.read_bytes() for p in fresh_dir.glob("*.go")}
    committed = {p.name: p.read_bytes() for p in committed_dir.glob("*.go")}
    assert fresh.keys() == committed.keys()
    stale = sorted(name for name in fresh if fresh[name] != committed[name])
    assert not stale, f"Go stubs differ from the .proto files (run scripts/gen-go.sh): {stale}"


def _readme_commands() -> tuple[str, str]:
    """The build and run lines of the example README's tested block, as printed."""
    text = (EXAMPLE / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- tests/integration/test_go_client.py runs[^>]*-->\n```sh\n(.*?)```",
                      text, re.S)  # fmt: skip
    assert block is not None, "client/examples/go/README.md lost its tested block"
    lines = [line for line in block.group(1).splitlines() if line.strip()]
    assert len(lines) == 2, lines
    return lines[0], lines[1]


@pytest.fixture(scope="module")
def built_example() -> str:
    """The README's build line, run from the repository root; the README's run line."""
    reason = _missing_toolchain()
    if reason is not None:
        pytest.skip(reason)
    build, run = _readme_commands()
    done = subprocess.run(["sh", "-c", build], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=540, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return run


def _run_readme_line(line: str, port: int) -> subprocess.CompletedProcess[str]:
    """The README's run line against the test's router (its port instead of 50051)."""
    assert DEFAULT_TARGET in line, line
    command = line.replace(DEFAULT_TARGET, f"127.0.0.1:{port}")
    return subprocess.run(["sh", "-c", command], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=60, check=False)  # fmt: skip


@pytest.mark.parametrize("where", ["xdg", "home"])
def test_go_example_as_documented_finds_the_local_token(
    built_example: str, where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The router and the example see the same runtime dir: $XDG_RUNTIME_DIR, else ~/.shellgate/run.
    if where == "xdg":
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "xdg"))
    else:
        monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert "-token" not in built_example
    run_line = built_example.replace("'echo hello from go'", "'echo hello-from-go; exit 3'")
    assert run_line != built_example, built_example
    # A default router: it generates its token and refuses callers without it.
    with router_subprocess(["--log-level", "WARNING"], local_token=True) as (_proc, port):
        token_dir = tmp_path / ("xdg" if where == "xdg" else "home/.shellgate/run") / "shellgate"
        assert (token_dir / f"router-{port}.token").is_file()
        run = _run_readme_line(run_line, port)
        # An explicit -token still wins over the discovered one.
        wrong = _run_readme_line(run_line.replace(" -cmd", " -token wrong -cmd"), port)
    assert run.returncode == 0, run.stderr
    assert 'output: "hello-from-go\\n"' in run.stdout
    assert "exit code: 3\ntermination: TERMINATION_REASON_EXITED\n" in run.stdout
    item = json.loads(run.stdout.split("output item: ", 1)[1])
    assert item["call_id"] == "go-call-1" and "Process exited with code 3" in item["output"]
    assert wrong.returncode == 1 and "Unauthenticated" in wrong.stderr, wrong.stderr
