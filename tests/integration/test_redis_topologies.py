"""RedisSharedState on a real Redis Cluster (3 masters) and behind a real Sentinel, loopback.

Every store operation of a thread runs against the cluster (multi-key commands, MULTI
pipelines and the Lua scripts must stay in the thread's slot, or Redis answers CROSSSLOT);
the Sentinel URL finds the master it names.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from shellgate.router.runtime.store.redis_bus import RedisBus
from shellgate.router.runtime.store.redis_state import RedisSharedState
from shellgate.router.runtime.store.shared_state import PendingRecord, SessionRecord

from tests.integration.shared_support import REDIS_SERVER, TEST_SEAL, free_port, wait_listening
from tests.waiting import eventually

REDIS_CLI = shutil.which("redis-cli")
pytestmark = pytest.mark.skipif(
    REDIS_SERVER is None or REDIS_CLI is None, reason="redis-server / redis-cli not installed"
)


def _low_port() -> int:
    """A free port whose cluster bus port (+10000) is a valid, free port too."""
    for _ in range(200):
        port = free_port()
        if port > 55_000:
            continue
        with socket.socket() as s, contextlib.suppress(OSError):
            s.bind(("127.0.0.1", port + 10_000))
            return port
    raise RuntimeError("no free port pair")


@contextlib.contextmanager
def servers(folder: Path, extra: list[list[str]]) -> Iterator[list[int]]:
    """One redis-server per `extra` argument list, each in its own folder; their ports."""
    assert REDIS_SERVER is not None
    procs, ports = [], []
    try:
        for index, args in enumerate(extra):
            port = _low_port()
            work = folder / f"n{index}"
            work.mkdir(parents=True)
            argv = [REDIS_SERVER, *args, "--port", str(port), "--bind", "127.0.0.1",
                    "--save", "", "--appendonly", "no", "--dir", str(work)]  # fmt: skip
            proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            procs.append(proc)
            wait_listening(proc, port, f"redis on {port}")
            ports.append(port)
        yield ports
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(10)


def record(sid: int) -> SessionRecord:
    """A remote session record."""
    return SessionRecord(sid, "box", f"p{sid}", "c", ("sh",), False, True, 1, 2, 0, "i")


async def exercise(store: RedisSharedState) -> None:
    """Every operation of one thread, then a data loss noticed through the epoch marker."""
    tid = "0123456789abcdef.thread-1"
    assert await store.ensure_thread(tid, "g1") == "g1"
    assert await store.thread_generation(tid) == "g1"
    await store.approve(tid, "d1")
    assert await store.is_approved(tid, "d1")
    await store.set_grant(tid, "k", "v")
    assert await store.grants(tid) == {"k": "v"}
    await store.put_pending(tid, PendingRecord("a1", "c1", "i", "{}"), 60_000)
    assert await store.live_pending_ids(tid) == {"a1"}
    taken = await store.take_pending(tid, "a1")
    assert taken is not None and (taken.call_id, taken.payload) == ("c1", "{}")
    assert 0 < taken.ttl_ms <= 60_000
    assert await store.take_pending(tid, "a1") is None  # one taker wins
    assert await store.live_pending_ids(tid) == set()
    assert await store.reserve_session_id(tid, 1001)
    assert not await store.reserve_session_id(tid, 1001)
    await store.release_session_id(tid, 1001)
    await store.put_session(tid, record(1002))
    assert not await store.put_session_if_absent(tid, record(1002))
    assert await store.put_session_if_absent(tid, record(1003))
    assert [r.session_id for r in await store.list_sessions(tid)] == [1002, 1003]
    assert await store.delete_session(tid, 1003)
    await store.put_pending(tid, PendingRecord("a2", "c2", "i"), 60_000)
    assert await store.ensure_thread(tid, "other") == "g1"  # the Lua touch, existing thread
    sessions, pending = await store.drop_thread(tid)
    assert ([r.session_id for r in sessions], pending) == ([1002], 1)
    assert await store.thread_generation(tid) is None
    assert not await store.check_reset()  # first look: remembered
    assert store.monitor.up and not store.monitor.errors


def test_cluster(tmp_path: Path) -> None:
    node = ["--cluster-enabled", "yes", "--cluster-node-timeout", "2000"]
    with servers(tmp_path, [node, node, node]) as ports:
        assert REDIS_CLI is not None
        subprocess.run(
            [REDIS_CLI, "--cluster", "create", *(f"127.0.0.1:{p}" for p in ports),
             "--cluster-replicas", "0", "--cluster-yes"],
            check=True, capture_output=True, timeout=30,
        )  # fmt: skip
        info = [REDIS_CLI, "-p", str(ports[0]), "cluster", "info"]
        eventually(
            lambda: (
                b"cluster_state:ok" in subprocess.run(info, capture_output=True, timeout=5).stdout
            ),
            "the cluster ok",
            15,
            0.2,
        )

        async def main() -> None:
            url = f"redis+cluster://127.0.0.1:{ports[1]}"
            store = RedisSharedState.from_url(url, idle_ttl_ms=60_000, seal=TEST_SEAL)
            try:
                await exercise(store)
                await bus_round_trip(store)
            finally:
                await store.aclose()

        asyncio.run(main())


async def bus_round_trip(store: RedisSharedState) -> None:
    """Two replicas' buses on the store's bus client: a request reaches the holder only."""
    assert store.bus_client is not None
    buses = [
        RedisBus(store.link, prefix="t:", instance_id=name) for name in ("one", "two")
    ]

    async def holds(message: dict[str, Any]) -> dict[str, Any] | None:
        return {"who": "two"} if message.get("call_id") == "x" else None

    async def never(message: dict[str, Any]) -> dict[str, Any] | None:
        return None

    buses[0].on_request("interrupt", never)
    buses[1].on_request("interrupt", holds)
    try:
        for bus in buses:
            await bus.start()
        assert [a.get("who") for a in await buses[0].ask("interrupt", {"call_id": "x"})] == ["two"]
        assert await buses[0].ask("interrupt", {"call_id": "y"}) == []
    finally:
        for bus in buses:
            await bus.aclose()


def test_sentinel(tmp_path: Path) -> None:
    with servers(tmp_path / "master", [[]]) as (master,):
        conf = tmp_path / "sentinel.conf"
        conf.write_text(
            f"sentinel monitor shellgate 127.0.0.1 {master} 1\n"
            "sentinel down-after-milliseconds shellgate 5000\n"
        )
        with servers(tmp_path / "sentinel", [[str(conf), "--sentinel"]]) as (sentinel,):

            async def main() -> None:
                url = f"redis+sentinel://127.0.0.1:{sentinel}/shellgate/0"
                store = RedisSharedState.from_url(url, idle_ttl_ms=60_000, seal=TEST_SEAL)
                try:
                    await bus_round_trip(store)
                    await exercise(store)
                finally:
                    await store.aclose()

            asyncio.run(main())
