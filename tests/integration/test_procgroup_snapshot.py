"""The shared /proc group snapshot and the liveness checks built on it, on real processes
(its caching with a fake scan and clock: tests/unit/test_group_snapshot_cache.py)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator

import pytest
from shellgate.common.process.group_snapshot import GroupSnapshot, GroupSnapshots, scan_groups
from shellgate.common.process.procgroup import (
    cheap_alive,
    group_alive,
    group_members,
    kill_group,
)

from tests.waiting import eventually


def _spawn(script: str) -> subprocess.Popen[bytes]:
    # Its own session, so its own process group (pgid == pid); dies with the test runner.
    return subprocess.Popen(
        ["setpriv", "--pdeathsig", "KILL", "bash", "-c", script], start_new_session=True
    )


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat", "rb") as handle:
        return handle.read().rsplit(b")", 1)[1].split()[0].decode()


def _members_now(pgid: int) -> list[int]:
    return scan_groups().members(pgid)


@pytest.fixture
def groups() -> Iterator[list[subprocess.Popen[bytes]]]:
    spawned: list[subprocess.Popen[bytes]] = []
    yield spawned
    for proc in spawned:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)


def test_scan_lists_the_leader_and_its_children(groups: list[subprocess.Popen[bytes]]) -> None:
    proc = _spawn("sleep 30 & sleep 30 & wait")
    groups.append(proc)
    eventually(lambda: len(_members_now(proc.pid)) == 3, "three members", 5.0, 0.01)
    members = _members_now(proc.pid)
    assert proc.pid in members
    assert all(os.getpgid(pid) == proc.pid for pid in members)
    assert group_members(proc.pid, snapshots=GroupSnapshots()) == members
    assert os.getpid() not in members


def test_a_zombie_counts_as_gone(groups: list[subprocess.Popen[bytes]]) -> None:
    proc = _spawn("exit 0")
    groups.append(proc)
    eventually(
        lambda: _state(proc.pid) == "Z", "the leader a zombie", 5.0, 0.01
    )  # not reaped: still in the group
    os.killpg(proc.pid, 0)  # the group exists (a zombie) ...
    assert _members_now(proc.pid) == []  # ... but has no live member
    snapshots = GroupSnapshots()
    assert group_members(proc.pid, snapshots=snapshots) == []
    assert cheap_alive(proc.pid, snapshots) is None  # only a scan can tell
    assert asyncio.run(group_alive(proc.pid, snapshots=snapshots)) is False
    proc.wait(timeout=5)
    assert cheap_alive(proc.pid, snapshots) is False  # reaped: ESRCH answers


def test_a_stale_snapshot_never_reports_a_group_gone(
    groups: list[subprocess.Popen[bytes]],
) -> None:
    snapshots = GroupSnapshots(max_age_s=3600)
    snapshots.get()  # taken before the group exists: knows no member of it
    # The leader exits; its child lives on, reparented, so no cheap check finds it.
    proc = _spawn("sleep 30 & exit 0")
    groups.append(proc)
    eventually(lambda: _state(proc.pid) == "Z", "the leader a zombie", 5.0, 0.01)
    assert snapshots.latest is not None and snapshots.latest.members(proc.pid) == []
    assert cheap_alive(proc.pid, snapshots) is None
    assert asyncio.run(group_alive(proc.pid, snapshots=snapshots)) is True
    # group_members may answer from the stale view (documented), the fresh scan does not.
    assert len(_members_now(proc.pid)) == 1


def test_cheap_checks_answer_without_a_scan(groups: list[subprocess.Popen[bytes]]) -> None:
    def no_scan(clock: object) -> GroupSnapshot:
        raise AssertionError("a full /proc scan was not needed")

    snapshots = GroupSnapshots(scan=no_scan)
    proc = _spawn("sleep 30 & wait")
    groups.append(proc)
    assert cheap_alive(proc.pid, snapshots) is True  # the leader's own stat
    assert asyncio.run(group_alive(proc.pid, snapshots=snapshots)) is True


def test_kill_group_reaps_an_orphaned_member_that_ignores_term(
    groups: list[subprocess.Popen[bytes]],
) -> None:
    proc = _spawn("trap '' TERM; sleep 30 & exit 0")
    groups.append(proc)
    eventually(lambda: _state(proc.pid) == "Z", "the leader a zombie", 5.0, 0.01)
    assert len(_members_now(proc.pid)) == 1
    started = time.monotonic()
    assert asyncio.run(kill_group(proc.pid, grace_ms=200, gone_timeout_ms=3_000))
    # A bound against waiting out the whole gone timeout, not a speed target: the 200 ms
    # grace then KILL takes well under 0.5 s, so 3 s is a 6x margin.
    assert time.monotonic() - started < 3.0
    assert _members_now(proc.pid) == []


def test_members_from_a_stale_snapshot_are_rechecked_now(
    groups: list[subprocess.Popen[bytes]],
) -> None:
    proc = _spawn("sleep 30 & wait")
    groups.append(proc)
    # A stale view that names a pid outside the group (as after pid reuse) and not the leader.
    snapshots = GroupSnapshots(
        max_age_s=3600, scan=lambda clock: GroupSnapshot(clock(), {proc.pid: (os.getpid(),)})
    )
    assert group_members(proc.pid, snapshots=snapshots) == [proc.pid]
