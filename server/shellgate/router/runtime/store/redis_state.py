"""SharedState on Redis (redis-py asyncio): routers behind a load balancer share threads.

Keys live under `{prefix}{<thread id>}:` (the braces keep a thread's keys in one cluster
slot) and all expire together with the thread's idle TTL, refreshed on every use. A Redis
error becomes SharedStateUnavailableError (UNAVAILABLE): an approval that cannot be read
is never treated as granted.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, cast

from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import RedisError
from shellgate.common.errors import SharedStateUnavailableError
from shellgate.router.runtime.store.monitor import StoreMonitor
from shellgate.router.runtime.store.redis_connect import connect
from shellgate.router.runtime.store.shared_state import CallRecord, PendingRecord, SessionRecord

__all__ = ["DEFAULT_PREFIX", "RedisSharedState"]

DEFAULT_PREFIX = "shellgate:"
_DATA = ("approved", "grants", "pendings", "ids", "sessions")

# KEYS: the thread's fixed keys, `_FIXED` in order, all under one hash tag (one slot); the
# per-session and per-approval keys are built from KEYS[1]'s base and carry the same tag, so
# the script touches one slot only (Redis Cluster routes it by KEYS[1]).
# ARGV: generation, ttl_ms, create (1/0). Returns the generation or nil.
_FIXED = ("meta", *_DATA)
_TOUCH = """
local base = string.sub(KEYS[1], 1, -5)
local g = redis.call('GET', KEYS[1])
if not g then
  if ARGV[3] == '0' then return false end
  -- A new thread: nothing of an earlier one with the same id may survive.
  for _, sid in ipairs(redis.call('SMEMBERS', KEYS[6])) do
    redis.call('DEL', base .. 'sess:' .. sid)
  end
  for _, aid in ipairs(redis.call('SMEMBERS', KEYS[4])) do
    redis.call('DEL', base .. 'pending:' .. aid)
  end
  for i = 2, #KEYS do
    redis.call('DEL', KEYS[i])
  end
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return ARGV[1]
end
for i = 1, #KEYS do
  redis.call('PEXPIRE', KEYS[i], ARGV[2])
end
for _, sid in ipairs(redis.call('SMEMBERS', KEYS[6])) do
  redis.call('PEXPIRE', base .. 'sess:' .. sid, ARGV[2])
end
return g
"""
# KEYS: the session record, the thread's `sessions` and `ids` sets. ARGV: session id, record
# JSON, ttl_ms. Stores the record only when absent (re-publication after a data loss must
# not overwrite one a poll wrote since). Returns 1 when stored.
_PUT_ABSENT = """
if redis.call('SET', KEYS[1], ARGV[2], 'NX', 'PX', ARGV[3]) then
  redis.call('SADD', KEYS[2], ARGV[1])
  redis.call('SADD', KEYS[3], ARGV[1])
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
  redis.call('PEXPIRE', KEYS[3], ARGV[3])
  return 1
end
return 0
"""

# KEYS: a call record. ARGV: record JSON, ttl_ms. Stores it when absent (returns nil), else
# returns the record there: one claimant wins on every replica.
_CLAIM = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return false end
return redis.call('GET', KEYS[1])
"""


async def _await(value: Awaitable[Any] | Any) -> Any:
    # redis-py types many commands as `Awaitable[T] | T` for its sync/async twins.
    return await cast(Awaitable[Any], value)


class RedisSharedState:
    """Shared thread state in Redis; `idle_ttl_ms` is the thread idle TTL (spec 06 §2)."""

    def __init__(
        self,
        client: Redis | RedisCluster,
        *,
        idle_ttl_ms: int,
        prefix: str = DEFAULT_PREFIX,
        monitor: StoreMonitor | None = None,
    ) -> None:
        self._r = client
        self._ttl = int(idle_ttl_ms)
        self._prefix = prefix
        self._touch = client.register_script(_TOUCH)
        self._put_absent = client.register_script(_PUT_ABSENT)
        self._claim = client.register_script(_CLAIM)
        self.monitor = monitor or StoreMonitor()
        # The epoch marker: a random value set once into an empty Redis. It vanishing (or
        # changing) means Redis lost its data; `on_reset` then re-publishes what this
        # replica holds (see check_reset).
        self._epoch_key = f"{prefix}epoch"
        self._epoch: bytes | None = None
        self._epoch_lock = asyncio.Lock()
        self.on_reset: Callable[[], Awaitable[None]] | None = None
        # Connections to the Sentinels (redis+sentinel URLs) or the Cluster bus node,
        # closed with the store.
        self._sentinels: list[Redis] = []
        # Pub/sub of the replica bus (a Cluster's is one node: redis_connect.connect).
        self.bus_client: Redis | None = client if isinstance(client, Redis) else None

    @classmethod
    def from_url(
        cls, url: str, *, idle_ttl_ms: int, prefix: str = DEFAULT_PREFIX, timeout_ms: int = 2_000
    ) -> RedisSharedState:
        """Connect lazily to a `redis_url` (one server, Sentinel or Cluster: redis_connect)."""
        client, extra, bus = connect(url, timeout_ms=timeout_ms)
        store = cls(client, idle_ttl_ms=idle_ttl_ms, prefix=prefix)
        store._sentinels = extra
        store.bus_client = bus
        return store

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
        if not (self.monitor.up or probing):
            # Down: fail fast (the probe finds it again) instead of a timeout per call.
            self.monitor.refused(what)
            raise SharedStateUnavailableError(
                f"shared thread state unavailable ({what}): {self.monitor.last_error}"
            )
        try:
            value = await op()
        except (RedisError, OSError) as exc:
            self.monitor.failed(what, exc)
            raise SharedStateUnavailableError(
                f"shared thread state unavailable ({what}): {exc}"
            ) from exc
        self.monitor.succeeded()
        return value

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
        """Delete the thread's keys; its remote sessions and live pending count."""
        b = self.base(thread_id)
        sessions = await self.list_sessions(thread_id)
        aids = await self._run("drop", lambda: _await(self._r.smembers(b + "pendings")))
        pending_keys = [b + "pending:" + (a.decode() if isinstance(a, bytes) else a) for a in aids]
        live = 0
        if pending_keys:
            live = int(await self._run("drop", lambda: _await(self._r.exists(*pending_keys))))
        keys = [b + "meta", *(b + k for k in _DATA), *pending_keys]
        keys += [b + f"sess:{r.session_id}" for r in sessions]
        await self._run("drop", lambda: _await(self._r.delete(*keys)))
        return sessions, live

    async def approve(self, thread_id: str, digest: str) -> None:
        """Record an approval key digest."""
        key = self.base(thread_id) + "approved"
        pipe = self._r.pipeline(transaction=True)
        pipe.sadd(key, digest)
        pipe.pexpire(key, self._ttl)
        await self._run("approve", pipe.execute)

    async def is_approved(self, thread_id: str, digest: str) -> bool:
        """Whether the digest was approved for the session."""
        key = self.base(thread_id) + "approved"
        return bool(
            await self._run("approval lookup", lambda: _await(self._r.sismember(key, digest)))
        )

    async def set_grant(self, thread_id: str, key: str, value: str) -> None:
        """Store a sticky grant."""
        hkey = self.base(thread_id) + "grants"
        pipe = self._r.pipeline(transaction=True)
        pipe.hset(hkey, key, value)
        pipe.pexpire(hkey, self._ttl)
        await self._run("grant", pipe.execute)

    async def grants(self, thread_id: str) -> dict[str, str]:
        """All sticky grants."""
        raw = await self._run(
            "grants", lambda: _await(self._r.hgetall(self.base(thread_id) + "grants"))
        )
        return {_text(k): _text(v) for k, v in raw.items()}

    async def put_pending(self, thread_id: str, record: PendingRecord, ttl_ms: int) -> None:
        """Record a pending approval (its own TTL, bounded by the thread's)."""
        b = self.base(thread_id)
        value = json.dumps(
            {"call_id": record.call_id, "instance_id": record.instance_id,
             "payload": record.payload},
            separators=(",", ":"),
        )  # fmt: skip
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
        data = json.loads(raw)
        return PendingRecord(
            approval_id, str(data["call_id"]), str(data["instance_id"]),
            str(data.get("payload", "")), max(0, int(ttl)),
        )  # fmt: skip

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

    async def claim_call(
        self, thread_id: str, key: str, record: CallRecord, ttl_ms: int
    ) -> CallRecord | None:
        """Store unless present (atomically); the present record otherwise.

        Call records carry the thread generation in `key`, so an ended thread's records are
        unreachable and simply expire (`completed_call_ttl_ms`).
        """
        keys = [self.base(thread_id) + "call:" + key]
        args: list[str | int] = [record.to_json(), int(ttl_ms)]
        value = await self._run("call", lambda: self._claim(keys=keys, args=args))
        return None if value is None else CallRecord.from_json(value)

    async def put_call(self, thread_id: str, key: str, record: CallRecord, ttl_ms: int) -> None:
        """Store (replace) a record."""
        name, text = self.base(thread_id) + "call:" + key, record.to_json()
        await self._run("call", lambda: _await(self._r.set(name, text, px=int(ttl_ms))))

    async def drop_call(self, thread_id: str, key: str) -> None:
        """Forget a record."""
        name = self.base(thread_id) + "call:" + key
        await self._run("call", lambda: _await(self._r.delete(name)))

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._r.aclose()
        for sentinel in self._sentinels:
            await sentinel.aclose()


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
