"""Thread state proportional to what is live (issue 30 item 4), on a real redis-server.

Churn: 2 000 Executes on new thread ids through a router with `max_threads = 100` (eight
callers at once) all complete, and Redis then holds the keys of at most 100 threads: an
evicted thread's keys are deleted with it, not left to their idle TTL (before: 4 001 keys
of 2 000 threads). Ending a thread deletes every key of it (its call records too).
Fair shares: subject bob's new threads evict bob's own idle threads first and alice's only
while she holds more than her share (max_threads / 2), so alice keeps her share of
threads with their "approved for session" grants.
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import grpc
import pytest
import redis
from shellgate.router.service.config import Limits, RouterConfig
from shellgate.v1 import router_pb2

from tests.integration.shared_support import REDIS_SERVER, redis_server, shared_router
from tests.router_harness import Router, completed, function_item, router_config, turn

pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")

ALICE, BOB = "alice-5e0c1b7d", "bob-92af03c4"
_ids = itertools.count(1)


@pytest.fixture
def redis_url() -> Iterator[str]:
    with redis_server() as url:
        yield url


def threads_in_redis(url: str) -> collections.Counter[str]:
    """Keys per thread tag (`{thread}`) in Redis."""
    client = redis.Redis.from_url(url)
    try:
        return collections.Counter(
            key.decode().split("{", 1)[1].split("}", 1)[0]
            for key in client.scan_iter(count=1_000) if b"{" in key
        )  # fmt: skip
    finally:
        client.close()


def execute(router: Router, thread: str, command: str, token: str = "",
            resume: router_pb2.ResumeCall | None = None) -> list[router_pb2.ExecuteResponse]:  # fmt: skip
    """All events of one shell_command (or a resume) on the embedded environment."""
    md = [("authorization", f"Bearer {token}")] if token else None
    if resume is not None:
        request = router_pb2.ExecuteRequest(thread_id=thread, resume=resume)
    else:
        args = {"command": command, "login": False}
        request = router_pb2.ExecuteRequest(
            thread_id=thread, turn=turn(environment_id="local"),
            item=function_item("shell_command", args, f"c{next(_ids)}"),
        )  # fmt: skip
    return list(router.stub.Execute(request, timeout=30, metadata=md))


def limited(tmp_path: Path, max_threads: int, **extra: object) -> RouterConfig:
    """A router config with `max_threads` and the embedded environment in `tmp_path`."""
    limits = replace(Limits(shutdown_grace_ms=1_000), max_threads=max_threads)
    return router_config(local_cwd=str(tmp_path), limits=limits, **extra)


def test_churn_of_2000_threads_leaves_keys_of_the_100_live_ones(
    tmp_path: Path, redis_url: str
) -> None:
    with shared_router(limited(tmp_path, 100), redis_url) as router:

        def one(i: int) -> int:
            return completed(execute(router, f"churn-{i}", "true")).exit_code

        with ThreadPoolExecutor(8) as pool:
            codes = collections.Counter(pool.map(one, range(2_000)))
        # No call refused: concurrent creations each make their own room.
        assert codes == {0: 2_000}
        assert len(router.running.app.threads) == 100
        held = threads_in_redis(redis_url)
        assert len(held) <= 100, len(held)
        # meta, the call record and its index: nothing of the evicted 1 900 is left.
        assert sum(held.values()) <= 3 * 100, held.most_common(3)


def test_ending_a_thread_deletes_every_key_of_it(tmp_path: Path, redis_url: str) -> None:
    with shared_router(limited(tmp_path, 100), redis_url) as router:
        for _ in range(3):
            assert completed(execute(router, "ended", "echo hi")).exit_code == 0
        (tag, keys), = threads_in_redis(redis_url).items()
        assert tag.endswith(".ended") and keys >= 3  # meta, the call records and their index
        reply = router.stub.EndThread(router_pb2.EndThreadRequest(thread_id="ended"), timeout=10)
        assert reply is not None
        assert threads_in_redis(redis_url) == {}


def test_another_subjects_new_threads_never_evict_below_a_fair_share(
    tmp_path: Path, redis_url: str
) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice {ALICE}\nbob {BOB}\n")
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "base.rules").write_text(
        'prefix_rule(pattern=["touch"], decision="prompt")\n'
    )
    config = limited(tmp_path, 10, token_file=str(tokens),
                     rules_dirs=(str(tmp_path / "rules"),))  # fmt: skip
    with shared_router(config, redis_url) as router:
        # alice: 6 threads, each with an "approved for session" grant for `touch`.
        for i in range(6):
            asked = execute(router, f"a{i}", "touch mark", ALICE)
            assert asked[-1].WhichOneof("event") == "approval_required"
            resume = router_pb2.ResumeCall(
                approval_id=asked[-1].approval_required.approval_id,
                decision=router_pb2.APPROVAL_DECISION_APPROVED_FOR_SESSION,
            )
            assert completed(execute(router, f"a{i}", "", ALICE, resume)).exit_code == 0
        # bob: 40 new threads, one after another.
        for i in range(40):
            assert completed(execute(router, f"b{i}", "true", BOB)).exit_code == 0

        def alive(thread: str, token: str) -> bool:
            md = [("authorization", f"Bearer {token}")]
            try:
                router.stub.ListSessions(
                    router_pb2.ListSessionsRequest(thread_id=thread), timeout=10, metadata=md
                )
            except grpc.RpcError as exc:
                assert exc.code() == grpc.StatusCode.NOT_FOUND, exc
                return False
            return True

        alice = [i for i in range(6) if alive(f"a{i}", ALICE)]
        bob = [i for i in range(40) if alive(f"b{i}", BOB)]
        # Her share of 10 between two subjects is 5: bob took her one thread past it (the
        # least recently used, a0) and then only ever his own.
        assert alice == [1, 2, 3, 4, 5]
        assert bob == list(range(35, 40))
        # What she kept is whole: the grant still answers without asking.
        for i in alice:
            assert completed(execute(router, f"a{i}", "touch mark", ALICE)).exit_code == 0
        # And Redis holds only the live threads.
        assert len(threads_in_redis(redis_url)) == 10
