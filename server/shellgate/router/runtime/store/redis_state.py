"""SharedState on Redis (redis-py asyncio): routers behind a load balancer share threads.

Keys live under `{prefix}{<thread id>}:` (the braces keep a thread's keys in one cluster
slot) and all expire together with the thread's idle TTL, refreshed on every use. A Redis
error becomes SharedStateUnavailableError (UNAVAILABLE): an approval that cannot be read
is never treated as granted.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable
from typing import Any, cast

from redis.asyncio import Redis
from redis.exceptions import RedisError
from shellgate.common.errors import SharedStateUnavailableError
from shellgate.router.runtime.store.shared_state import PendingRecord, SessionRecord

__all__ = ["DEFAULT_PREFIX", "WAITER_TTL_MS", "RedisSharedState"]

DEFAULT_PREFIX = "shellgate:"
# A queued lease waiter that has not retried for this long no longer holds its place.
WAITER_TTL_MS = 1_000
_DATA = ("approved", "grants", "pendings", "ids", "sessions")

# KEYS: none (all keys derive from ARGV[1], the thread's key base, kept in one slot).
# ARGV: base, generation, ttl_ms, create (1/0). Returns the generation or nil.
_TOUCH = """
local base = ARGV[1]
local meta = base .. 'meta'
local g = redis.call('GET', meta)
if not g then
  if ARGV[4] == '0' then return false end
  -- A new thread: nothing of an earlier one with the same id may survive.
  for _, sid in ipairs(redis.call('SMEMBERS', base .. 'sessions')) do
    redis.call('DEL', base .. 'sess:' .. sid)
  end
  for _, aid in ipairs(redis.call('SMEMBERS', base .. 'pendings')) do
    redis.call('DEL', base .. 'pending:' .. aid)
  end
  for _, k in ipairs({'approved', 'grants', 'pendings', 'ids', 'sessions'}) do
    redis.call('DEL', base .. k)
  end
  redis.call('SET', meta, ARGV[2], 'PX', ARGV[3])
  return ARGV[2]
end
redis.call('PEXPIRE', meta, ARGV[3])
for _, k in ipairs({'approved', 'grants', 'pendings', 'ids', 'sessions'}) do
  redis.call('PEXPIRE', base .. k, ARGV[3])
end
for _, sid in ipairs(redis.call('SMEMBERS', base .. 'sessions')) do
  redis.call('PEXPIRE', base .. 'sess:' .. sid, ARGV[3])
end
return g
"""


# ARGV: lease key, session key, token, expected consumed_seq, record JSON, ttl_ms.
# 1 = stored; 0 = the lease is not ours; -1 = the record is gone or was advanced by another.
_UPDATE_SESSION = """
if redis.call('GET', ARGV[1]) ~= ARGV[3] then return 0 end
local current = redis.call('GET', ARGV[2])
if not current then return -1 end
if tonumber(cjson.decode(current)['consumed_seq']) ~= tonumber(ARGV[4]) then return -1 end
redis.call('SET', ARGV[2], ARGV[5], 'PX', ARGV[6])
return 1
"""

# ARGV: lease key, token, ttl_ms, waiter_ttl_ms. Takes a free lease unless an earlier
# waiter is still waiting (first come, first served: a poll that just released cannot
# starve another that waits); otherwise queues the token. A waiter that stops retrying
# (gone, or gave up) drops out after waiter_ttl_ms. 1 = taken, 0 = queued.
_ACQUIRE_LEASE = """
local lease, token = ARGV[1], ARGV[2]
local queue = lease .. ':queue'
local blocked = redis.call('EXISTS', lease) == 1
if not blocked then
  while true do
    local first = redis.call('ZRANGE', queue, 0, 0)[1]
    if (not first) or first == token then break end
    if redis.call('EXISTS', queue .. ':' .. first) == 1 then
      blocked = true
      break
    end
    redis.call('ZREM', queue, first)
  end
end
if blocked then
  if not redis.call('ZSCORE', queue, token) then
    redis.call('ZADD', queue, redis.call('INCR', queue .. ':n'), token)
  end
  redis.call('SET', queue .. ':' .. token, '1', 'PX', ARGV[4])
  redis.call('PEXPIRE', queue, ARGV[3])
  redis.call('PEXPIRE', queue .. ':n', ARGV[3])
  return 0
end
redis.call('ZREM', queue, token)
redis.call('DEL', queue .. ':' .. token)
redis.call('SET', lease, token, 'PX', ARGV[3])
return 1
"""

# ARGV: lease key, token, ttl_ms (0 = release). Acts only on a lease the token holds.
_LEASE_OWNED = """
if ARGV[3] == '0' then
  -- Releasing also leaves the queue (a waiter that gives up).
  redis.call('ZREM', ARGV[1] .. ':queue', ARGV[2])
  redis.call('DEL', ARGV[1] .. ':queue:' .. ARGV[2])
end
if redis.call('GET', ARGV[1]) ~= ARGV[2] then return 0 end
if ARGV[3] == '0' then return redis.call('DEL', ARGV[1]) end
return redis.call('PEXPIRE', ARGV[1], ARGV[3])
"""


async def _await(value: Awaitable[Any] | Any) -> Any:
    # redis-py types many commands as `Awaitable[T] | T` for its sync/async twins.
    return await cast(Awaitable[Any], value)


class RedisSharedState:
    """Shared thread state in Redis; `idle_ttl_ms` is the thread idle TTL (spec 06 §2)."""

    def __init__(
        self,
        client: Redis,
        *,
        idle_ttl_ms: int,
        prefix: str = DEFAULT_PREFIX,
    ) -> None:
        self._r = client
        self._ttl = int(idle_ttl_ms)
        self._prefix = prefix
        self._touch = client.register_script(_TOUCH)
        self._update_session = client.register_script(_UPDATE_SESSION)
        self._lease_owned = client.register_script(_LEASE_OWNED)
        self._acquire_lease = client.register_script(_ACQUIRE_LEASE)

    @classmethod
    def from_url(
        cls, url: str, *, idle_ttl_ms: int, prefix: str = DEFAULT_PREFIX, timeout_ms: int = 2_000
    ) -> RedisSharedState:
        """Connect lazily to `redis://host:port/db` (or `rediss://` for TLS)."""
        client = Redis.from_url(
            url,
            socket_timeout=timeout_ms / 1000,
            socket_connect_timeout=timeout_ms / 1000,
        )
        return cls(client, idle_ttl_ms=idle_ttl_ms, prefix=prefix)

    @property
    def distributed(self) -> bool:
        """Always: other routers read the same keys."""
        return True

    def base(self, thread_id: str) -> str:
        """The key prefix of one thread."""
        return f"{self._prefix}{{{thread_id}}}:"

    async def _run(self, what: str, op: Awaitable[Any]) -> Any:
        try:
            return await op
        except (RedisError, OSError) as exc:
            raise SharedStateUnavailableError(
                f"shared thread state unavailable ({what}): {exc}"
            ) from exc

    async def _gen(self, thread_id: str, generation: str, create: bool) -> str | None:
        args: list[str | int] = [self.base(thread_id), generation, self._ttl, int(create)]
        value = await self._run("touch", self._touch(keys=[], args=args))
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
        aids = await self._run("drop", _await(self._r.smembers(b + "pendings")))
        pending_keys = [b + "pending:" + (a.decode() if isinstance(a, bytes) else a) for a in aids]
        live = 0
        if pending_keys:
            live = int(await self._run("drop", _await(self._r.exists(*pending_keys))))
        keys = [b + "meta", *(b + k for k in _DATA), *pending_keys]
        keys += [b + f"sess:{r.session_id}" for r in sessions]
        await self._run("drop", _await(self._r.delete(*keys)))
        return sessions, live

    async def approve(self, thread_id: str, digest: str) -> None:
        """Record an approval key digest."""
        key = self.base(thread_id) + "approved"
        pipe = self._r.pipeline(transaction=True)
        pipe.sadd(key, digest)
        pipe.pexpire(key, self._ttl)
        await self._run("approve", pipe.execute())

    async def is_approved(self, thread_id: str, digest: str) -> bool:
        """Whether the digest was approved for the session."""
        key = self.base(thread_id) + "approved"
        return bool(await self._run("approval lookup", _await(self._r.sismember(key, digest))))

    async def set_grant(self, thread_id: str, key: str, value: str) -> None:
        """Store a sticky grant."""
        hkey = self.base(thread_id) + "grants"
        pipe = self._r.pipeline(transaction=True)
        pipe.hset(hkey, key, value)
        pipe.pexpire(hkey, self._ttl)
        await self._run("grant", pipe.execute())

    async def grants(self, thread_id: str) -> dict[str, str]:
        """All sticky grants."""
        raw = await self._run("grants", _await(self._r.hgetall(self.base(thread_id) + "grants")))
        return {_text(k): _text(v) for k, v in raw.items()}

    async def put_pending(self, thread_id: str, record: PendingRecord, ttl_ms: int) -> None:
        """Record a pending approval (its own TTL, bounded by the thread's)."""
        b = self.base(thread_id)
        value = json.dumps(
            {"call_id": record.call_id, "instance_id": record.instance_id}, separators=(",", ":")
        )
        pipe = self._r.pipeline(transaction=True)
        pipe.set(b + "pending:" + record.approval_id, value, px=max(1, int(ttl_ms)))
        pipe.sadd(b + "pendings", record.approval_id)
        pipe.pexpire(b + "pendings", self._ttl)
        await self._run("pending", pipe.execute())

    async def get_pending(self, thread_id: str, approval_id: str) -> PendingRecord | None:
        """A live pending approval."""
        key = self.base(thread_id) + "pending:" + approval_id
        raw = await self._run("pending lookup", _await(self._r.get(key)))
        if raw is None:
            return None
        data = json.loads(raw)
        return PendingRecord(approval_id, data["call_id"], data["instance_id"])

    async def take_pending(self, thread_id: str, approval_id: str) -> bool:
        """Delete a pending approval atomically; False when already gone."""
        b = self.base(thread_id)
        pipe = self._r.pipeline(transaction=True)
        pipe.delete(b + "pending:" + approval_id)
        pipe.srem(b + "pendings", approval_id)
        deleted, _ = await self._run("pending", pipe.execute())
        return bool(deleted)

    async def reserve_session_id(self, thread_id: str, session_id: int) -> bool:
        """Claim an id (SADD is the atomic test-and-set)."""
        key = self.base(thread_id) + "ids"
        pipe = self._r.pipeline(transaction=True)
        pipe.sadd(key, session_id)
        pipe.pexpire(key, self._ttl)
        added, _ = await self._run("session id", pipe.execute())
        return bool(added)

    async def release_session_id(self, thread_id: str, session_id: int) -> None:
        """Give an id back."""
        await self._run(
            "session id", _await(self._r.srem(self.base(thread_id) + "ids", session_id))
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
        await self._run("session", pipe.execute())

    async def get_session(self, thread_id: str, session_id: int) -> SessionRecord | None:
        """A remote session."""
        raw = await self._run(
            "session lookup", _await(self._r.get(self.base(thread_id) + f"sess:{session_id}"))
        )
        return None if raw is None else SessionRecord.from_json(raw)

    async def list_sessions(self, thread_id: str) -> list[SessionRecord]:
        """Remote sessions by id."""
        b = self.base(thread_id)
        sids = await self._run("sessions", _await(self._r.smembers(b + "sessions")))
        ids = sorted(int(_text(s)) for s in sids)
        if not ids:
            return []
        raws = await self._run("sessions", _await(self._r.mget([b + f"sess:{i}" for i in ids])))
        return [SessionRecord.from_json(r) for r in raws if r is not None]

    async def delete_session(self, thread_id: str, session_id: int) -> bool:
        """Forget a remote session and release its id."""
        b = self.base(thread_id)
        pipe = self._r.pipeline(transaction=True)
        pipe.delete(b + f"sess:{session_id}")
        pipe.srem(b + "sessions", session_id)
        pipe.srem(b + "ids", session_id)
        deleted, _, _ = await self._run("session", pipe.execute())
        return bool(deleted)

    async def update_session(
        self, thread_id: str, record: SessionRecord, lease_token: str, expected_seq: int
    ) -> bool:
        """Compare-and-set the record under the lease (one Lua script: atomic)."""
        b = self.base(thread_id)
        sid = record.session_id
        args: list[str | int] = [
            b + f"lease:{sid}", b + f"sess:{sid}", lease_token, expected_seq,
            record.to_json(), self._ttl,
        ]  # fmt: skip
        stored = await self._run("session", self._update_session(keys=[], args=args))
        return int(stored) == 1

    async def acquire_lease(
        self, thread_id: str, session_id: int, token: str, ttl_ms: int
    ) -> bool:
        """SET PX when free and no earlier waiter is queued: the lease is ours until it
        expires or is released. A refused token is queued (retry within WAITER_TTL_MS)."""
        key = self.base(thread_id) + f"lease:{session_id}"
        args: list[str | int] = [key, token, max(1, int(ttl_ms)), WAITER_TTL_MS]
        return bool(await self._run("lease", self._acquire_lease(keys=[], args=args)))

    async def renew_lease(self, thread_id: str, session_id: int, token: str, ttl_ms: int) -> bool:
        """PEXPIRE, only while the token holds the lease."""
        key = self.base(thread_id) + f"lease:{session_id}"
        args: list[str | int] = [key, token, max(1, int(ttl_ms))]
        return bool(await self._run("lease", self._lease_owned(keys=[], args=args)))

    async def release_lease(self, thread_id: str, session_id: int, token: str) -> None:
        """Compare-and-delete (a queued, still waiting token leaves the queue instead)."""
        key = self.base(thread_id) + f"lease:{session_id}"
        await self._run("lease", self._lease_owned(keys=[], args=[key, token, 0]))

    async def thread_alive(self, thread_id: str) -> bool:
        """EXISTS on the thread's meta key (its TTL untouched)."""
        found = await self._run("thread", _await(self._r.exists(self.base(thread_id) + "meta")))
        return bool(found)

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._r.aclose()


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
