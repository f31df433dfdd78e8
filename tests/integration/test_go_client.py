"""The Go example (client/examples/go) built from the committed Go stubs and run against a
real router; the stubs are fresh (buf generate with the local protoc-gen-go plugins).

Toolchain: Debian's `golang-go` with its packaged grpc-go and protobuf sources, built in
GOPATH mode (the Go module proxy is not reachable from this project's machines);
scripts/setup-test.sh installs them. Skipped with the reason when any piece is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.paths import REPO_ROOT
from tests.router_harness import router_subprocess

pytestmark = [pytest.mark.external, pytest.mark.slow]

GO = shutil.which("go")
GOCODE = Path("/usr/share/gocode")  # Debian's golang-*-dev sources
MODULE = "github.com/shellgate/shellgate"
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


def test_go_example_builds_and_runs_against_a_router(tmp_path: Path) -> None:
    reason = _missing_toolchain()
    if reason is not None:
        pytest.skip(reason)
    assert GO is not None
    # GOPATH mode: the repository's client/ appears at its import path, the rest from Debian.
    gopath = tmp_path / "gopath"
    link = gopath / "src" / MODULE / "client"
    link.parent.mkdir(parents=True)
    link.symlink_to(REPO_ROOT / "client")
    env = dict(os.environ, GO111MODULE="off", GOPATH=f"{gopath}:{GOCODE}", GOFLAGS="")
    binary = tmp_path / "shellgate-go-example"
    build = subprocess.run([GO, "build", "-o", str(binary), "."], cwd=link / "examples" / "go",
                           env=env, capture_output=True, text=True, timeout=540, check=False)  # fmt: skip
    assert build.returncode == 0, build.stderr
    with router_subprocess(["--log-level", "WARNING"]) as (_proc, port):
        run = subprocess.run([str(binary), "-target", f"127.0.0.1:{port}", "-cmd",
                              "echo hello-from-go; exit 3"],
                             capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert 'output: "hello-from-go\\n"' in run.stdout
    assert "exit code: 3\ntermination: TERMINATION_REASON_EXITED\n" in run.stdout
    item = json.loads(run.stdout.split("output item: ", 1)[1])
    assert item["call_id"] == "go-call-1" and "Process exited with code 3" in item["output"]
