"""deploy/container: a structural lint of the Containerfile and a real run of the entry point.

Containers cannot run on the test machines, so the image itself is never built here.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FOLDER = REPO / "deploy" / "container"
CONTAINERFILE = FOLDER / "Containerfile"
ENTRYPOINT = FOLDER / "entrypoint.sh"
BUILD_TOOLS = re.compile(
    r"\b(gcc|g\+\+|clang|make|build-essential|python3?-dev|libc6?-dev|cmake|rustc|cargo)\b"
)


@dataclass
class Stage:
    """One FROM … block: its base, name and instructions (keyword, argument text)."""

    base: str
    name: str
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def args(self, keyword: str) -> list[str]:
        """Arguments of every instruction with this keyword."""
        return [a for k, a in self.instructions if k == keyword]


def parse_stages(text: str) -> tuple[dict[str, str], list[Stage]]:
    """Global ARG defaults and the stages; continuation lines are joined, comments dropped."""
    logical: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue  # a comment inside a continued instruction
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    assert not pending, "dangling line continuation"
    global_args: dict[str, str] = {}
    stages: list[Stage] = []
    for line in logical:
        keyword, _, rest = line.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            parts = rest.split()
            name = parts[2] if len(parts) == 3 and parts[1].upper() == "AS" else ""
            stages.append(Stage(parts[0], name))
        elif not stages:
            assert keyword == "ARG", f"only ARG may precede the first FROM: {line}"
            key, _, value = rest.partition("=")
            global_args[key.strip()] = value.strip()
        else:
            stages[-1].instructions.append((keyword, rest.strip()))
    return global_args, stages


GLOBAL_ARGS, STAGES = parse_stages(CONTAINERFILE.read_text())


def _base(stage: Stage) -> str:
    return re.sub(r"\$\{(\w+)\}", lambda m: GLOBAL_ARGS[m.group(1)], stage.base)


def test_multi_stage_build_then_slim_runtime() -> None:
    assert len(STAGES) >= 2
    build, final = STAGES[0], STAGES[-1]
    assert build.name, "the build stage must be named for COPY --from / --mount from="
    assert any("build --wheel" in run for run in build.args("RUN"))
    assert re.fullmatch(r"python:3\.1[1-9]-slim(-\w+)?", _base(final)), _base(final)
    # The runtime takes the wheels from the build stage and installs them offline.
    takes_wheels = [
        a for a in final.args("RUN") + final.args("COPY")
        if f"from={build.name}" in a or f"--from={build.name}" in a
    ]
    assert takes_wheels
    assert any("--no-index" in run and "shellgate" in run for run in final.args("RUN"))


def test_final_stage_runs_as_non_root() -> None:
    users = STAGES[-1].args("USER")
    assert users, "the final stage must switch to a non-root USER"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0")
    # Nothing after the last USER runs as root again.
    keywords = [k for k, _ in STAGES[-1].instructions]
    last_user = len(keywords) - 1 - keywords[::-1].index("USER")
    assert "RUN" not in keywords[last_user:]


def test_final_stage_has_sandbox_and_ssh_but_no_build_tools() -> None:
    runs = " ".join(STAGES[-1].args("RUN"))
    installs = " ".join(re.findall(r"apt-get install ([^&;]*)", runs))
    for package in ("bubblewrap", "openssh-client", "tini"):
        assert re.search(rf"\b{package}\b", installs), package
    assert "--no-install-recommends" in installs
    assert not BUILD_TOOLS.search(installs), installs
    assert "rm -rf /var/lib/apt/lists" in runs
    # bwrap must work through user namespaces, not setuid (no_new_privs would defeat it).
    assert "test ! -u /usr/bin/bwrap" in runs


def test_entrypoint_and_copies() -> None:
    final = STAGES[-1]
    entry = final.args("ENTRYPOINT")[-1]
    assert entry.startswith("["), "exec form, so signals reach tini"
    assert "tini" in entry and "shellgate-entrypoint" in entry
    for stage in STAGES:
        for copy in stage.args("COPY"):
            parts = [p for p in copy.split() if not p.startswith("--")]
            if any(p.startswith("--from") for p in copy.split()):
                continue
            for source in parts[:-1]:
                assert (REPO / source).exists(), f"COPY source missing from the context: {source}"
    assert "COPY ./tests" not in CONTAINERFILE.read_text()


def test_dockerignore_keeps_what_the_build_copies() -> None:
    ignore = (FOLDER / "Containerfile.dockerignore").read_text().splitlines()
    assert ignore[ignore.index("*")] == "*"
    kept = {line[1:].rstrip("/") for line in ignore if line.startswith("!")}
    for stage in STAGES:
        for copy in stage.args("COPY"):
            parts = [p for p in copy.split() if not p.startswith("--")]
            for source in parts[:-1]:
                assert source.rstrip("/").removeprefix("./") in kept, source


def _stub_path(tmp_path: Path) -> dict[str, str]:
    """PATH with stub daemons that print their argv, so the entry point can really run."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("shellgate", "shellgate-execserver"):
        stub = bin_dir / name
        stub.write_text(f'#!/bin/sh\necho {name} "$@"\n')
        stub.chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    env.pop("SHELLGATE_CONFIG", None)
    return env


def _entry(env: dict[str, str], *args: str) -> str:
    sh = shutil.which("sh") or "/bin/sh"
    return subprocess.run(
        [sh, str(ENTRYPOINT), *args], env=env, capture_output=True, text=True, timeout=30,
        check=True,
    ).stdout.strip()


def test_entrypoint_dispatches_to_each_daemon(tmp_path: Path) -> None:
    env = _stub_path(tmp_path)
    assert _entry(env) == "shellgate serve"
    assert _entry(env, "router", "--listen", "0.0.0.0:1") == "shellgate serve --listen 0.0.0.0:1"
    assert _entry(env, "execserver", "--print-port") == "shellgate-execserver serve --print-port"
    assert _entry(env, "exec-server") == "shellgate-execserver serve"
    assert _entry(env, "echo", "hi") == "hi"
    config = tmp_path / "x.toml"
    config.write_text("")
    env["SHELLGATE_CONFIG"] = str(config)
    assert _entry(env, "router") == f"shellgate serve --config {config}"
    # An explicit --config wins over the environment.
    assert _entry(env, "execserver", "--config=/y.toml") == "shellgate-execserver serve --config=/y.toml"
    env["SHELLGATE_CONFIG"] = str(tmp_path / "missing.toml")
    assert _entry(env, "router") == "shellgate serve"


def test_entrypoint_shellcheck() -> None:
    tool = shutil.which("shellcheck")
    if tool is None:
        pytest.skip("shellcheck is not installed (sh -n still checks the syntax)")
    subprocess.run([tool, "-s", "sh", str(ENTRYPOINT)], check=True, timeout=60)


def test_entrypoint_syntax() -> None:
    subprocess.run(["sh", "-n", str(ENTRYPOINT)], check=True, timeout=30)
    assert os.access(ENTRYPOINT, os.X_OK)
