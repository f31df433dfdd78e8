"""apply_patch never changes anything outside the writable roots without approval: not
through a file symlink, a directory symlink, nor a symlink swapped in while it applies
(issue 13 finding 3); locally (the router writes) and on a daemon (the daemon writes)."""

from __future__ import annotations

import ctypes
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from shellgate.v1 import common_pb2, router_pb2

from tests.execserver_harness import daemon_subprocess
from tests.router_harness import (
    Router,
    completed,
    execute,
    function_item,
    router_config,
    running_router,
    turn,
)

WORKSPACE_WRITE = common_pb2.PERMISSION_PROFILE_KIND_WORKSPACE_WRITE
SECRET = "outside-contents\n"


@pytest.fixture
def layout() -> Iterator[tuple[Path, Path]]:
    """A workspace and an outside folder, both off /tmp (a writable root of every turn)."""
    base = Path(tempfile.mkdtemp(prefix="shellgate-confine-", dir="/var/tmp"))
    ws, outside = base / "ws", base / "outside"
    ws.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    (outside / "victim.txt").write_text(SECRET)
    try:
        yield ws, outside
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _patch(router: Router, ws: Path, body: str, call_id: str,
           approval: int = common_pb2.APPROVAL_POLICY_KIND_ON_REQUEST, env: str = "local",
           thread: str = "t") -> list[router_pb2.ExecuteResponse]:  # fmt: skip
    script = f"apply_patch <<'EOF'\n*** Begin Patch\n{body}*** End Patch\nEOF\n"
    request = router_pb2.ExecuteRequest(
        thread_id=thread,
        turn=turn(profile=WORKSPACE_WRITE, cwd=str(ws), approval=approval, environment_id=env),
        item=function_item("exec_command", {"cmd": script}, call_id),
    )
    return execute(router.stub, request)


def _outside_intact(outside: Path) -> None:
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt", "victim.txt"]
    assert (outside / "secret.txt").read_text() == SECRET
    assert (outside / "victim.txt").read_text() == SECRET


def test_symlinks_out_of_the_workspace_need_approval(layout: tuple[Path, Path]) -> None:
    ws, outside = layout
    (ws / "evil_link").symlink_to(outside / "secret.txt")
    (ws / "dirlink").symlink_to(outside)
    with running_router(router_config(local_cwd=str(ws))) as router:
        cases = {
            "file": "*** Update File: evil_link\n@@\n-outside-contents\n+pwned\n",
            "add": "*** Add File: dirlink/new.txt\n+pwned\n",
            "delete": "*** Delete File: dirlink/victim.txt\n",
        }
        for call_id, body in cases.items():
            events = _patch(router, ws, body, call_id)
            assert events[-1].WhichOneof("event") == "approval_required", (call_id, events[-1])
        # Under `never` the same patches are rejected, not applied.
        for call_id, body in cases.items():
            done = completed(_patch(router, ws, body, f"n-{call_id}",
                                    approval=common_pb2.APPROVAL_POLICY_KIND_NEVER))  # fmt: skip
            assert "pwned" not in done.output_text
    _outside_intact(outside)
    # An ordinary patch inside the workspace still applies without asking.
    with running_router(router_config(local_cwd=str(ws))) as router:
        done = completed(_patch(router, ws, "*** Add File: fine.txt\n+ok\n", "ok"))
    assert (ws / "fine.txt").read_text() == "ok\n", done.output_text


def test_a_symlink_swapped_in_while_patches_apply_never_leads_out(
    layout: tuple[Path, Path],
) -> None:
    ws, outside = layout
    real, link = ws / "sub", ws / "sub.link"
    real.mkdir()
    link.symlink_to(outside)
    libc = ctypes.CDLL(None, use_errno=True)
    stop = threading.Event()
    flips = 0

    def racer() -> None:
        # RENAME_EXCHANGE swaps `sub` (a real folder) and `sub.link` (a symlink to the
        # outside) atomically: `sub` is always one or the other, never missing.
        nonlocal flips
        at_fdcwd, rename_exchange = -100, 2
        while not stop.is_set():
            if libc.renameat2(at_fdcwd, bytes(real), at_fdcwd, bytes(link), rename_exchange):
                raise OSError(ctypes.get_errno(), "renameat2 failed")
            flips += 1

    thread = threading.Thread(target=racer)
    thread.start()
    applied = 0
    try:
        with running_router(router_config(local_cwd=str(ws))) as router:
            deadline = time.monotonic() + 15
            for i in range(150):
                if time.monotonic() > deadline:
                    break
                # A thread per patch: one that asks (the link is in place) stays parked,
                # and a thread holds at most limits.max_pending_approvals_per_thread.
                body = f"*** Add File: sub/f{i}.txt\n+x\n"
                events = _patch(router, ws, body, f"r{i}", thread=f"t{i}")
                if events[-1].WhichOneof("event") == "completed" and "Success" in (
                    events[-1].completed.output_text
                ):
                    applied += 1
    finally:
        stop.set()
        thread.join(10)
    _outside_intact(outside)
    assert flips > 50 and applied > 0, (flips, applied)


def test_a_daemon_confines_an_auto_approved_patch(layout: tuple[Path, Path]) -> None:
    ws, outside = layout
    (ws / "evil_link").symlink_to(outside / "secret.txt")
    (ws / "dirlink").symlink_to(outside)
    with daemon_subprocess(["--root", str(ws)]) as daemon:
        config = router_config(
            local_cwd=str(ws),
            environments=(_remote(daemon.target),),
        )
        with running_router(config) as router:
            for call_id, body in {
                "file": "*** Update File: evil_link\n@@\n-outside-contents\n+pwned\n",
                "add": "*** Add File: dirlink/new.txt\n+pwned\n",
                "delete": "*** Delete File: dirlink/victim.txt\n",
            }.items():
                # The router cannot see the daemon's symlinks, so the patch is not asked for;
                # the daemon performs its writes beneath the roots and refuses these.
                events = _patch(router, ws, body, call_id, env="box")
                if events[-1].WhichOneof("event") == "completed":
                    assert "pwned" not in events[-1].completed.output_text
    _outside_intact(outside)


def _remote(target: str) -> object:
    from shellgate.router.runtime.environments.remote.config import DialSettings, RemoteConfig

    return RemoteConfig("box", target, dial=DialSettings(insecure=True))
