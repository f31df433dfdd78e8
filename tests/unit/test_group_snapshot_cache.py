"""The shared /proc group snapshot's caching, with a fake scan and clock (no process is
started; the liveness checks on real processes: tests/integration/test_procgroup_snapshot.py)."""

from __future__ import annotations

import threading
import time

from shellgate.common.process.group_snapshot import GroupSnapshot, GroupSnapshots


def test_snapshot_is_reused_within_max_age_and_refreshed_after() -> None:
    now = [100.0]
    scans: list[float] = []

    def scan(clock: object) -> GroupSnapshot:
        scans.append(now[0])
        return GroupSnapshot(now[0], {7: (7, 8)})

    snapshots = GroupSnapshots(0.2, clock=lambda: now[0], scan=scan)
    assert snapshots.members(7) == [7, 8]
    now[0] += 0.15
    assert snapshots.members(7) == [7, 8]
    assert scans == [100.0]
    now[0] += 0.1  # 0.25 s old: too stale
    snapshots.members(7)
    assert scans == [100.0, 100.25]
    # A caller that needs a view from after a moment never gets an older scan.
    assert snapshots.get(taken_after=100.25).taken_at == 100.25
    assert len(scans) == 2
    now[0] += 0.01
    assert snapshots.get(taken_after=100.26).taken_at == 100.26
    assert len(scans) == 3


def test_concurrent_requests_share_one_scan() -> None:
    started = threading.Event()
    release = threading.Event()
    scans: list[float] = []

    def slow_scan(clock: object) -> GroupSnapshot:
        scans.append(time.monotonic())
        started.set()
        assert release.wait(5)
        return GroupSnapshot(time.monotonic(), {})

    snapshots = GroupSnapshots(0.2, scan=slow_scan)
    threads = [threading.Thread(target=snapshots.get) for _ in range(8)]
    threads[0].start()
    assert started.wait(5)
    for thread in threads[1:]:
        thread.start()
    release.set()
    for thread in threads:
        thread.join(5)
    assert len(scans) == 1
    assert snapshots.scans == 1
