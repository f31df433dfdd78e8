"""The poll lease and the consumed-seq compare-and-set on a real redis-server.

A lease is held by one token at a time; only its holder renews or releases it; waiters are
served in order (a lapsed waiter loses its place); a record is updated only by the lease
holder and only from the consumed seq it started from.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from shellgate.router.runtime.store.redis_state import WAITER_TTL_MS, RedisSharedState
from shellgate.router.runtime.store.shared_state import SessionRecord
from shellgate.router.runtime.threads.session_lease import SessionBusyError, SessionLease

from tests.integration.shared_support import REDIS_SERVER, TEST_SEAL, redis_server

pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")

THREAD = "lease-thread"


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with redis_server() as url:
        yield url


def record(consumed_seq: int) -> SessionRecord:
    """A session record at `consumed_seq`."""
    return SessionRecord(
        session_id=1234, environment_id="box", backend_process_id="p", call_id="c",
        argv=("cat",), tty=False, sandboxed=False, started_at_ms=1, last_used_at_ms=1,
        consumed_seq=consumed_seq,
    )  # fmt: skip


def test_lease_and_compare_and_set(redis_url: str) -> None:
    async def scenario() -> None:
        store = RedisSharedState.from_url(redis_url, idle_ttl_ms=60_000, seal=TEST_SEAL)
        try:
            await store.ensure_thread(THREAD, "g1")
            await store.put_session(THREAD, record(0))
            assert await store.acquire_lease(THREAD, 1234, "a", 5_000)
            assert not await store.acquire_lease(THREAD, 1234, "b", 5_000)
            assert not await store.renew_lease(THREAD, 1234, "b", 5_000)
            await store.release_lease(THREAD, 1234, "b")  # not b's: left alone
            assert not await store.acquire_lease(THREAD, 1234, "b", 5_000)
            # Only the holder stores, and only from the seq it started at.
            assert not await store.update_session(THREAD, record(5), "b", 0)
            assert not await store.update_session(THREAD, record(5), "a", 3)
            assert await store.update_session(THREAD, record(5), "a", 0)
            assert not await store.update_session(THREAD, record(9), "a", 0)
            stored = await store.get_session(THREAD, 1234)
            assert stored is not None and stored.consumed_seq == 5
            assert await store.renew_lease(THREAD, 1234, "a", 5_000)
            await store.release_lease(THREAD, 1234, "a")
            assert await store.acquire_lease(THREAD, 1234, "b", 5_000)
            await store.release_lease(THREAD, 1234, "b")
            # A waiting poll gets the lease when its holder lets go, or gives up in time.
            held = await SessionLease.acquire(store, THREAD, 1234, 0)
            with pytest.raises(SessionBusyError):
                await SessionLease.acquire(store, THREAD, 1234, 0.2)
            waiter = asyncio.ensure_future(SessionLease.acquire(store, THREAD, 1234, 5))
            await asyncio.sleep(0.2)
            assert not waiter.done()
            await held.release()
            # The poll that gave up left the queue: the waiter is served at once.
            second = await asyncio.wait_for(waiter, 0.5)
            await second.release()
            # First come, first served: a waiter is not overtaken by a fresh poll.
            assert await store.acquire_lease(THREAD, 1234, "holder", 5_000)
            assert not await store.acquire_lease(THREAD, 1234, "waiter", 5_000)
            await store.release_lease(THREAD, 1234, "holder")
            assert not await store.acquire_lease(THREAD, 1234, "fresh", 5_000)
            assert await store.acquire_lease(THREAD, 1234, "waiter", 5_000)
            await store.release_lease(THREAD, 1234, "waiter")
            # "fresh" queued behind it; once it stops retrying its place lapses.
            await asyncio.sleep(WAITER_TTL_MS / 1000 + 0.2)
            assert await store.acquire_lease(THREAD, 1234, "late", 5_000)
            await store.release_lease(THREAD, 1234, "late")
            assert await store.thread_alive(THREAD)
            assert not await store.thread_alive("never-used")
        finally:
            await store.aclose()

    asyncio.run(scenario())
