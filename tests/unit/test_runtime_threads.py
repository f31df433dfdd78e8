"""Thread registry: id validation, pending approvals with TTL, idle sweep (spec 06 §2, §3)."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from shellgate.common.errors import (
    InvalidArgumentError,
    UnknownApprovalError,
    UnknownCallError,
    UnknownThreadError,
)
from shellgate.router.runtime.threads.registry import (
    EndedThread,
    InMemoryThreadStore,
    validate_thread_id,
)


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("tid", ["a", "A.b_c:d-9", "x" * 128])
def test_valid_thread_ids(tid: str) -> None:
    assert validate_thread_id(tid) == tid


@pytest.mark.parametrize("tid", ["", "x" * 129, "a b", "a/b", "é", "a\n"])
def test_invalid_thread_ids(tid: str) -> None:
    with pytest.raises(InvalidArgumentError) as err:
        validate_thread_id(tid)
    assert err.value.code == "INVALID_ARGUMENT"


def test_pending_approval_ttl_and_idle_sweep() -> None:
    async def main() -> None:
        clock = FakeClock()
        store = InMemoryThreadStore(clock=clock, approval_ttl_ms=1_000, idle_ttl_ms=60_000)
        thread = await store.get_or_create("t1")
        assert await store.get_or_create("t1") is thread
        pending = await thread.add_pending("call-1", '{"stored": 1}')
        assert uuid.UUID(pending.approval_id).version == 4
        taken = await thread.take_pending(pending.approval_id)
        assert (taken.approval_id, taken.call_id, taken.payload) == (
            pending.approval_id, "call-1", '{"stored": 1}'
        )
        with pytest.raises(UnknownApprovalError):
            await thread.take_pending(pending.approval_id)
        late = await thread.add_pending("call-2", "{}")
        clock.now += 1.0
        with pytest.raises(UnknownApprovalError):
            await thread.take_pending(late.approval_id)
        with pytest.raises(UnknownCallError):
            thread.interrupt("nope")
        await thread.approve_for_session("d" * 64)
        assert await store.sweep_idle() == []
        clock.now += 61
        assert await store.sweep_idle() == ["t1"]
        with pytest.raises(UnknownThreadError):
            await store.get("t1")
        fresh = await store.get_or_create("t1")
        assert not await fresh.is_approved_for_session("d" * 64)
        ended = await store.end("t1")
        assert ended.terminated_sessions == 0
        # Ending is idempotent: again, or a thread never used, reports zero counts.
        assert await store.end("t1") == EndedThread(0, 0)
        assert await store.end("never-used") == EndedThread(0, 0)
        with pytest.raises(UnknownThreadError):
            await store.get("never-used")

    asyncio.run(main())
