"""SharedState on Redis (redis-py asyncio): routers behind a load balancer share threads.

Keys live under `{prefix}{<thread id>}:` (the braces keep a thread's keys in one cluster
slot) and all expire together with the thread's idle TTL, refreshed on every use. A Redis
error becomes SharedStateUnavailableError (UNAVAILABLE): an approval that cannot be read
is never treated as granted; every operation passes the one gate of `redis_link`. What grants (approved digests, sticky grants, parked calls)
carries a `RecordSeal`: a record written into Redis by anyone else is refused and reported.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, cast

from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from shellgate.router.runtime.store.monitor import StoreMonitor
from shellgate.router.runtime.store.record_seal import RecordSeal
from shellgate.router.runtime.store.redis_link import RedisLink
from shellgate.router.runtime.store.redis_scripts import (
    ACQUIRE_LEASE,
    CLAIM,
    DROP,
    LEASE_OWNED,
    PUT_ABSENT,
    TOUCH,
    UPDATE_SESSION,
)
from shellgate.router.runtime.store.sealed_records import (
    approved_member,
    opened_grant,
    pending_text,
    sealed_grant,
    unsealed_pending,
)
from shellgate.router.runtime.store.shared_state import CallRecord, PendingRecord, SessionRecord

__all__ = ["DEFAULT_PREFIX", "WAITER_TTL_MS", "RedisSharedState"]

DEFAULT_PREFIX = "shellgate:"
# A queued lease waiter that has not retried for this long no longer holds its place.
WAITER_TTL_MS = 1_000
# `calls` indexes the thread's call records (so ending or evicting it deletes them too).
_DATA = ("approved", "grants", "pendings", "ids", "sessions", "calls")

# A thread's fixed keys, in the order redis_scripts.TOUCH reads them as KEYS.
_FIXED = ("meta", *_DATA)



async def _await(value: Awaitable[Any] | Any) -> Any:
    # redis-py types many commands as `Awaitable[T] | T` for its sync/async twins.
    return await cast(Awaitable[Any], value)


class RedisSharedState:
    """Shared thread state in Redis; `idle_ttl_ms` is the thread idle TTL (spec 06 §2)."""

    def __init__(
        self,
        link: RedisLink,
        *,
        idle_ttl_ms: int,
        seal: RecordSeal,
        prefix: str = DEFAULT_PREFIX,
    ) -> None:
        self.link = link
        client = self._r = link.client
        self.seal = seal
        self._ttl = int(idle_ttl_ms)
        self._prefix = prefix
        self._touch = client.register_script(TOUCH)
        self._put_absent = client.register_script(PUT_ABSENT)
        self._claim = client.register_script(CLAIM)
        self._drop = client.register_script(DROP)
        # The epoch marker: a random value set once into an empty Redis. It vanishing (or
        # changing) means Redis lost its data; `on_reset` then re-publishes what this
        # replica holds (see check_reset).
        self._epoch_key = f"{prefix}epoch"
        self._epoch: bytes | None = None
        self._epoch_lock = asyncio.Lock()
        self.on_reset: Callable[[], Awaitable[None]] | None = None
        self._update_session = client.register_script(UPDATE_SESSION)
        self._lease_owned = client.register_script(LEASE_OWNED)
        self._acquire_lease = client.register_script(ACQUIRE_LEASE)

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        idle_ttl_ms: int,
        seal: RecordSeal,
        prefix: str = DEFAULT_PREFIX,
        timeout_ms: int = 2_000,
    ) -> RedisSharedState:
        """Connect lazily to a `redis_url` (one server, Sentinel or Cluster: redis_connect)."""
        link = RedisLink.from_url(url, timeout_ms=timeout_ms)
        return cls(link, idle_ttl_ms=idle_ttl_ms, seal=seal, prefix=prefix)

    @property
    def monitor(self) -> StoreMonitor:
        """The store's reachability (the link's one monitor)."""
        return self.link.monitor

    @property
    def bus_client(self) -> Redis | None:
        """The replica bus's pub/sub client."""
        return self.link.bus_client

    @property
    def distributed(self) -> bool:
        """Always: other routers read the same keys."""
        return True

    @property
    def client(self) -> Redis | RedisCluster:
        """The connection pool (shared amendments use it)."""
        return self._r

    @property
    def prefix(self) -> str:
        """The key prefix of every key."""
        return self._prefix

    def base(self, thread_id: str) -> str:
        """The key prefix of one thread."""
        return f"{self._prefix}{{{thread_id}}}:"

    async def _run(
        self, what: str, op: Callable[[], Awaitable[Any]], *, probing: bool = False
    ) -> Any:
        return await self.link.run(what, op, probing=probing)

    async def probe(self) -> None:
        """PING and check the epoch marker (the store monitor calls it about once a second)."""
        await self._run("ping", lambda: _await(self._r.ping()), probing=True)
        await self.check_reset(probing=True)

    async def check_reset(self, *, probing: bool = False) -> bool:
        """Whether Redis lost its data since this replica last looked (then re-publish).

        The first look only remembers the marker (setting it when absent).
        """
        async with self._epoch_lock:
            await self._run(
                "epoch",
                lambda: _await(self._r.set(self._epoch_key, uuid.uuid4().hex, nx=True)),
                probing=probing,
            )
            current = await self._run("epoch", lambda: _await(self._r.get(self._epoch_key)), probing=probing
            )  # fmt: skip
            if self._epoch is None or current == self._epoch:
                self._epoch = current
                return False
            self.monitor.data_lost()
            if self.on_reset is not None:
                await self.on_reset()
            # Remembered only once re-published: a failure retries at the next probe.
            self._epoch = current
            return True

    def recovered_within(self, seconds: float) -> bool:
        """Whether Redis came back from an outage less than `seconds` ago (the monitor's)."""
        return self.monitor.recovered_within(seconds)

    async def restore_thread(self, thread_id: str, generation: str) -> None:
        """Re-create a thread with the generation this replica holds (after a data loss)."""
        meta = self.base(thread_id) + "meta"
        await self._run("restore", lambda: _await(self._r.set(meta, generation, px=self._ttl)))

    async def _gen(self, thread_id: str, generation: str, create: bool) -> str | None:
        b = self.base(thread_id)
        keys = [b + k for k in _FIXED]
        args: list[str | int] = [generation, self._ttl, int(create)]
        value = await self._run("touch", lambda: self._touch(keys=keys, args=args))
        if value is None:
            return None
        return value.decode() if isinstance(value, bytes) else str(value)

    async def ensure_thread(self, thread_id: str, generation: str) -> str:
        """Create if absent, refresh every key's TTL; the generation."""
        value = await self._gen(thread_id, generation, True)
        assert value is not None
        return value

    async def thread_generation(self, thread_id: str) -> str | None:
        """The live generation (TTL refreshed), or None."""
        return await self._gen(thread_id, "", False)

    async def drop_thread(self, thread_id: str) -> tuple[list[SessionRecord], int]:
        """Delete every key of the thread; its remote sessions and live pending count."""
        sessions = await self.list_sessions(thread_id)
        live = len(await self.live_pending_ids(thread_id))
        await self._drop_keys(thread_id, "", 0, force=True)
        return sessions, live

    async def drop_idle_thread(self, thread_id: str, generation: str, idle_ms: int) -> bool:
        """Delete the thread's keys if no replica used it for `idle_ms` and nothing of it is
        live (sessions, pending approvals, calls not done); whether they were deleted."""
        return await self._drop_keys(thread_id, generation, idle_ms, force=False)

    async def _drop_keys(self, thread_id: str, generation: str, idle_ms: int, *,
                         force: bool) -> bool:  # fmt: skip
        b = self.base(thread_id)
        keys = [b + k for k in _FIXED]
        args: list[str | int] = [generation, self._ttl, max(0, int(idle_ms)), int(force)]
        return bool(await self._run("drop", lambda: self._drop(keys=keys, args=args)))

    async def approve(self, thread_id: str, digest: str) -> None:
        """Record an approval key digest (sealed)."""
        key = self.base(thread_id) + "approved"
        pipe = self._r.pipeline(transaction=True)
        pipe.sadd(key, approved_member(self.seal, thread_id, digest))
        pipe.pexpire(key, self._ttl)
        await self._run("approve", pipe.execute)

    async def is_approved(self, thread_id: str, digest: str) -> bool:
        """Whether the digest was approved for the session (a forged member is refused)."""
        key = self.base(thread_id) + "approved"
        pipe = self._r.pipeline(transaction=False)
        pipe.sismember(key, approved_member(self.seal, thread_id, digest))
        pipe.sismember(key, digest)
        sealed, bare = await self._run("approval lookup", pipe.execute)
        if not sealed and bare:
            self.seal.forged("session approval", thread=thread_id, digest=digest)
        return bool(sealed)

    async def set_grant(self, thread_id: str, key: str, value: str) -> None:
        """Store a sticky grant (`<seal>:<value>`)."""
        hkey = self.base(thread_id) + "grants"
        sealed = sealed_grant(self.seal, thread_id, key, value)
        pipe = self._r.pipeline(transaction=True)
        pipe.hset(hkey, key, sealed)
        pipe.pexpire(hkey, self._ttl)
        await self._run("grant", pipe.execute)

    async def grants(self, thread_id: str) -> dict[str, str]:
        """All sticky grants whose seal verifies (the others are refused and reported)."""
        raw = await self._run(
            "grants", lambda: _await(self._r.hgetall(self.base(thread_id) + "grants"))
        )
        opened = {(n := _text(k)): opened_grant(self.seal, thread_id, n, _text(v))
                  for k, v in raw.items()}  # fmt: skip
        return {name: value for name, value in opened.items() if value is not None}

    async def put_pending(self, thread_id: str, record: PendingRecord, ttl_ms: int) -> None:
        """Record a pending approval (its own TTL, bounded by the thread's)."""
        b = self.base(thread_id)
        value = pending_text(self.seal, thread_id, record)
        pipe = self._r.pipeline(transaction=True)
        pipe.set(b + "pending:" + record.approval_id, value, px=max(1, int(ttl_ms)))
        pipe.sadd(b + "pendings", record.approval_id)
        pipe.pexpire(b + "pendings", self._ttl)
        await self._run("pending", pipe.execute)

    async def take_pending(self, thread_id: str, approval_id: str) -> PendingRecord | None:
        """Read and delete a pending approval in one MULTI (exactly one router gets it)."""
        b = self.base(thread_id)
        key = b + "pending:" + approval_id
        pipe = self._r.pipeline(transaction=True)
        pipe.get(key)
        pipe.pttl(key)
        pipe.delete(key)
        pipe.srem(b + "pendings", approval_id)
        raw, ttl, _, _ = await self._run("pending", pipe.execute)
        if raw is None:
            return None
        return unsealed_pending(self.seal, thread_id, approval_id, raw, int(ttl))

    async def live_pending_ids(self, thread_id: str) -> set[str]:
        """The live pending ids (records expire by themselves; their index entries are pruned)."""
        b = self.base(thread_id)
        members = await self._run("pending", lambda: _await(self._r.smembers(b + "pendings")))
        ids = sorted(m.decode() if isinstance(m, bytes) else str(m) for m in members)
        if not ids:
            return set()
        pipe = self._r.pipeline(transaction=False)
        for approval_id in ids:
            pipe.exists(b + "pending:" + approval_id)
        found = await self._run("pending", pipe.execute)
        gone = [a for a, alive in zip(ids, found, strict=True) if not alive]
        if gone:
            await self._run("pending", lambda: _await(self._r.srem(b + "pendings", *gone)))
        return {a for a, alive in zip(ids, found, strict=True) if alive}

    async def reserve_session_id(self, thread_id: str, session_id: int) -> bool:
        """Claim an id (SADD is the atomic test-and-set)."""
        key = self.base(thread_id) + "ids"
        pipe = self._r.pipeline(transaction=True)
        pipe.sadd(key, session_id)
        pipe.pexpire(key, self._ttl)
        added, _ = await self._run("session id", pipe.execute)
        return bool(added)

    async def release_session_id(self, thread_id: str, session_id: int) -> None:
        """Give an id back."""
        await self._run(
            "session id", lambda: _await(self._r.srem(self.base(thread_id) + "ids", session_id))
        )

    async def put_session(self, thread_id: str, record: SessionRecord) -> None:
        """Store or update a remote session."""
        b = self.base(thread_id)
        sid = record.session_id
        pipe = self._r.pipeline(transaction=True)
        pipe.set(b + f"sess:{sid}", record.to_json(), px=self._ttl)
        pipe.sadd(b + "sessions", sid)
        pipe.sadd(b + "ids", sid)
        for k in ("sessions", "ids"):
            pipe.pexpire(b + k, self._ttl)
        await self._run("session", pipe.execute)

    async def put_session_if_absent(self, thread_id: str, record: SessionRecord) -> bool:
        """Store a remote session unless a record of it exists; whether it was stored."""
        b = self.base(thread_id)
        keys = [b + f"sess:{record.session_id}", b + "sessions", b + "ids"]
        args: list[str | int] = [record.session_id, record.to_json(), self._ttl]
        return bool(await self._run("session", lambda: self._put_absent(keys=keys, args=args)))

    async def get_session(self, thread_id: str, session_id: int) -> SessionRecord | None:
        """A remote session."""
        raw = await self._run(
            "session lookup",
            lambda: _await(self._r.get(self.base(thread_id) + f"sess:{session_id}")),
        )
        return None if raw is None else SessionRecord.from_json(raw)

    async def list_sessions(self, thread_id: str) -> list[SessionRecord]:
        """Remote sessions by id."""
        b = self.base(thread_id)
        sids = await self._run("sessions", lambda: _await(self._r.smembers(b + "sessions")))
        ids = sorted(int(_text(s)) for s in sids)
        if not ids:
            return []
        raws = await self._run(
            "sessions", lambda: _await(self._r.mget([b + f"sess:{i}" for i in ids]))
        )
        return [SessionRecord.from_json(r) for r in raws if r is not None]

    async def delete_session(self, thread_id: str, session_id: int) -> bool:
        """Forget a remote session and release its id."""
        b = self.base(thread_id)
        pipe = self._r.pipeline(transaction=True)
        pipe.delete(b + f"sess:{session_id}")
        pipe.srem(b + "sessions", session_id)
        pipe.srem(b + "ids", session_id)
        deleted, _, _ = await self._run("session", pipe.execute)
        return bool(deleted)

    async def update_session(
        self, thread_id: str, record: SessionRecord, lease_token: str, expected_seq: int
    ) -> bool:
        """Compare-and-set the record under the lease (one Lua script: atomic)."""
        b = self.base(thread_id)
        sid = record.session_id
        keys = [b + f"lease:{sid}", b + f"sess:{sid}"]
        args: list[str | int] = [lease_token, expected_seq, record.to_json(), self._ttl]
        stored = await self._run(
            "session", lambda: _await(self._update_session(keys=keys, args=args))
        )
        return int(stored) == 1

    async def acquire_lease(
        self, thread_id: str, session_id: int, token: str, ttl_ms: int
    ) -> bool:
        """SET PX when free and no earlier waiter is queued: the lease is ours until it
        expires or is released. A refused token is queued (retry within WAITER_TTL_MS)."""
        key = self.base(thread_id) + f"lease:{session_id}"
        args: list[str | int] = [token, max(1, int(ttl_ms)), WAITER_TTL_MS]
        return bool(
            await self._run("lease", lambda: _await(self._acquire_lease(keys=[key], args=args)))
        )

    async def renew_lease(self, thread_id: str, session_id: int, token: str, ttl_ms: int) -> bool:
        """PEXPIRE, only while the token holds the lease."""
        key = self.base(thread_id) + f"lease:{session_id}"
        args: list[str | int] = [token, max(1, int(ttl_ms))]
        return bool(
            await self._run("lease", lambda: _await(self._lease_owned(keys=[key], args=args)))
        )

    async def release_lease(self, thread_id: str, session_id: int, token: str) -> None:
        """Compare-and-delete (a queued, still waiting token leaves the queue instead)."""
        key = self.base(thread_id) + f"lease:{session_id}"
        await self._run("lease", lambda: _await(self._lease_owned(keys=[key], args=[token, 0])))

    async def thread_alive(self, thread_id: str) -> bool:
        """EXISTS on the thread's meta key (its TTL untouched)."""
        key = self.base(thread_id) + "meta"
        found = await self._run("thread", lambda: _await(self._r.exists(key)))
        return bool(found)

    async def claim_call(
        self, thread_id: str, key: str, record: CallRecord, ttl_ms: int
    ) -> CallRecord | None:
        """Store unless present (atomically); the present record otherwise.

        Call records carry the thread generation in `key`, so an ended thread's records are
        unreachable and simply expire (`completed_call_ttl_ms`).
        """
        b = self.base(thread_id)
        keys = [b + "call:" + key, b + "calls"]
        args: list[str | int] = [record.to_json(), self._call_ttl(ttl_ms), key, self._ttl]
        value = await self._run("call", lambda: _await(self._claim(keys=keys, args=args)))
        return None if value is None else CallRecord.from_json(value)

    async def put_call(self, thread_id: str, key: str, record: CallRecord, ttl_ms: int) -> None:
        """Store (replace) a record."""
        b = self.base(thread_id)
        pipe = self._r.pipeline(transaction=True)
        pipe.set(b + "call:" + key, record.to_json(), px=self._call_ttl(ttl_ms))
        pipe.sadd(b + "calls", key)
        pipe.pexpire(b + "calls", self._ttl)
        await self._run("call", pipe.execute)

    def _call_ttl(self, ttl_ms: int) -> int:
        # No key of a thread outlives the thread's idle TTL (an idle thread leaves nothing).
        return max(1, min(int(ttl_ms), self._ttl))

    async def drop_call(self, thread_id: str, key: str) -> None:
        """Forget a record."""
        b = self.base(thread_id)
        pipe = self._r.pipeline(transaction=True)
        pipe.delete(b + "call:" + key)
        pipe.srem(b + "calls", key)
        await self._run("call", pipe.execute)

    async def aclose(self) -> None:
        """Close the connection pools."""
        await self.link.aclose()


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
