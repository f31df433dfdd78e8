"""The operator-approval board in Redis: every replica lists and decides, one decision wins.

Keys live under ONE fixed hash tag, `{prefix}{approvals}:` — unlike thread keys, which are
tagged per thread — because the listing needs a global index: `index` (a sorted set of
approval ids scored by deadline) and `a:<approval id>` (a hash: view JSON, replica,
status, decision, operator, deadline). In Redis Cluster all of them hash to one slot, so
each Lua script below declares both keys in KEYS and stays atomic on that slot.
A settle is announced with the replica-bus notice `approval_settled`; the waiting replica
also re-reads its entry every `[approvals] poll_ms` in case the notice is lost.

Both halves of an entry are sealed (`record_seal`): the view with its replica at post, the
decision (status, decision, operator) bound to the approval id and the view it settles.
An entry whose view seal fails is refused (it does not exist for operators or the waiting
call); a settle whose seal fails is refused, reported and undone, so the entry waits for
a real operator again.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from shellgate.router.runtime.approvals.board import TOMBSTONE_MS, BoardEntry, Settle
from shellgate.router.runtime.approvals.desk import view_from_json, view_to_json
from shellgate.router.runtime.approvals.vocabulary import (
    ApprovalDecision,
    BoardStatus,
    SettleOutcome,
)
from shellgate.router.runtime.store.record_seal import RecordSeal
from shellgate.router.runtime.store.record_seal import digest as record_digest
from shellgate.router.runtime.store.redis_bus import RedisBus
from shellgate.router.runtime.store.redis_link import RedisLink

__all__ = ["SETTLED_NOTICE", "RedisBoard"]

SETTLED_NOTICE = "approval_settled"
T = TypeVar("T")


# KEYS: the entry, the index. ARGV: id, view JSON, replica, deadline_ms, ttl_ms, seal.
_POST = """
redis.call('HSET', KEYS[1], 'view', ARGV[2], 'replica', ARGV[3], 'status', 'pending',
           'deadline', ARGV[4], 'seal', ARGV[6])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
return 1
"""

# KEYS: the entry, the index. ARGV: id, status, decision, operator, now_ms ('' = no
# deadline check), the decision's seal. Returns 'ok', 'missing', or the status that stands
# ('decided', 'expired'); the entry leaves the index once settled.
_SETTLE = """
local status = redis.call('HGET', KEYS[1], 'status')
if not status then return 'missing' end
if status ~= 'pending' then return status end
if ARGV[5] ~= '' and tonumber(ARGV[5]) >= tonumber(redis.call('HGET', KEYS[1], 'deadline')) then
  return 'expired'
end
redis.call('HSET', KEYS[1], 'status', ARGV[2], 'decision', ARGV[3], 'operator', ARGV[4],
           'dseal', ARGV[6])
redis.call('ZREM', KEYS[2], ARGV[1])
return 'ok'
"""

# KEYS: the entry, the index. ARGV: id, the refused decision seal. Puts a settle whose
# seal failed back to pending (unless it changed meanwhile) and into the index.
_UNSETTLE = """
local status = redis.call('HGET', KEYS[1], 'status')
if not status or status == 'pending' then return 0 end
if (redis.call('HGET', KEYS[1], 'dseal') or '') ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], 'status', 'pending', 'decision', '', 'operator', '', 'dseal', '')
redis.call('ZADD', KEYS[2], redis.call('HGET', KEYS[1], 'deadline'), ARGV[1])
return 1
"""


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value or "")


class RedisBoard:
    """OperatorBoard on Redis (see the module docstring for keys and atomicity)."""

    def __init__(
        self,
        link: RedisLink,
        *,
        prefix: str,
        bus: RedisBus,
        seal: RecordSeal,
    ) -> None:
        # The shared store's one gate: a failed board operation counts as the store being
        # down (health, metrics, the outage's log), one that gets through as it being up.
        self._link = link
        client = self._r = link.client
        self._base = f"{prefix}{{approvals}}:"
        self._index = self._base + "index"
        self._bus = bus
        self._post = client.register_script(_POST)
        self._settle = client.register_script(_SETTLE)
        self._unsettle = client.register_script(_UNSETTLE)
        self._seal = seal
        self._events: dict[str, asyncio.Event] = {}
        bus.on_notice(SETTLED_NOTICE, self._wake_all)

    def _key(self, approval_id: str) -> str:
        return self._base + "a:" + approval_id

    async def _guarded(self, what: str, op: Callable[[], Awaitable[T]]) -> T:
        """Through the store's one gate: a Redis failure is its UNAVAILABLE error."""
        return await self._link.run(f"approvals {what}", op)

    async def _wake_all(self) -> None:
        for event in self._events.values():
            event.set()

    async def post(self, entry: BoardEntry) -> None:
        """Publish a new pending approval (TTL: deadline plus the tombstone)."""
        view = entry.view
        ttl_ms = max(view.deadline_ms - view.created_at_ms, 1) + TOMBSTONE_MS
        text = view_to_json(view)
        seal = self._seal.seal("board.view", view.approval_id, text, entry.replica)
        await self._guarded(
            "post",
            lambda: self._post(
                keys=[self._key(view.approval_id), self._index],
                args=[view.approval_id, text, entry.replica, view.deadline_ms, ttl_ms, seal],
            ),
        )

    def _decision_seal(self, approval_id: str, view: str, status: str, decision: str,
                       operator: str) -> str:  # fmt: skip
        return self._seal.seal(
            "board.decision", approval_id, record_digest(view), status, decision, operator
        )

    async def get(self, approval_id: str) -> BoardEntry | None:
        """The entry whose seals verify, or None (a forged view is no entry)."""
        raw = await self._guarded("get", lambda: self._r.hgetall(self._key(approval_id)))
        fields = {_text(k): _text(v) for k, v in raw.items()}
        if "view" not in fields:
            return None
        view, replica = fields["view"], fields.get("replica", "")
        if not self._seal.verify(fields.get("seal"), "board.view", approval_id, view, replica):
            self._seal.forged("operator approval view", approval_id=approval_id)
            return None
        status, decision = fields.get("status", ""), fields.get("decision", "")
        if status in ("", BoardStatus.PENDING):
            return _entry(fields)
        if self._seal.verify(
            fields.get("dseal"), "board.decision",
            approval_id, record_digest(view), status, decision, fields.get("operator", ""),
        ):  # fmt: skip
            return _entry(fields)
        self._seal.forged(
            "operator decision", approval_id=approval_id,
            claimed_operator=fields.get("operator", ""), claimed_decision=decision,
        )  # fmt: skip
        await self._guarded(
            "get",
            lambda: self._unsettle(
                keys=[self._key(approval_id), self._index],
                args=[approval_id, fields.get("dseal", "")],
            ),
        )
        return _entry(fields, pending=True)

    async def pending(self, now_ms: int) -> list[BoardEntry]:
        """Pending entries before their deadline, oldest first (past ones pruned)."""
        # Ids past their deadline (or whose entry expired) leave the index here.
        await self._guarded("list", lambda: self._r.zremrangebyscore(self._index, "-inf", now_ms))
        members = await self._guarded("list", lambda: self._r.zrange(self._index, 0, -1))
        ids = [_text(i) for i in members]
        entries = []
        for approval_id in ids:
            entry = await self.get(approval_id)
            if entry is None:
                await self._guarded("list", functools.partial(self._r.zrem, self._index, approval_id))
            elif entry.status is BoardStatus.PENDING:
                entries.append(entry)
        return sorted(entries, key=lambda e: (e.view.created_at_ms, e.view.approval_id))

    async def settle(
        self,
        approval_id: str,
        status: BoardStatus,
        decision: ApprovalDecision,
        operator: str,
        now_ms: int | None,
    ) -> Settle:
        """Settle once (atomic on the approvals slot), then tell every replica."""
        view = await self._guarded("settle", lambda: self._r.hget(self._key(approval_id), "view"))
        if view is None:
            return Settle(SettleOutcome.MISSING)
        seal = self._decision_seal(approval_id, _text(view), status, decision, operator)
        keys = [self._key(approval_id), self._index]
        args = [approval_id, status, decision, operator, "" if now_ms is None else now_ms, seal]
        outcome = SettleOutcome(
            _text(await self._guarded("settle", lambda: self._settle(keys=keys, args=args)))
        )
        if outcome is SettleOutcome.OK:
            await self._bus.notice(SETTLED_NOTICE)
        return Settle(outcome)

    async def withdraw(self, approval_id: str) -> None:
        """Forget the entry and its index member."""
        self.release(approval_id)
        await self._guarded("withdraw", lambda: self._r.delete(self._key(approval_id)))
        await self._guarded("withdraw", lambda: self._r.zrem(self._index, approval_id))

    def release(self, approval_id: str) -> None:
        """Drop the wake-up event of a call no longer waiting."""
        self._events.pop(approval_id, None)

    async def changed(self, approval_id: str, timeout_s: float) -> None:
        """Wait for a settle notice, at most `timeout_s` (the caller polls)."""
        event = self._events.setdefault(approval_id, asyncio.Event())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), max(timeout_s, 0.0))
        event.clear()


def _entry(fields: dict[str, str], *, pending: bool = False) -> BoardEntry:
    """The entry of a hash whose seals verified (`pending`: its decision was refused)."""
    view = view_from_json(fields["view"])
    if pending or fields.get("status", "") in ("", BoardStatus.PENDING):
        # A pending entry's decision fields are unsealed: never read them.
        return BoardEntry(view, fields.get("replica", ""))
    decision = fields.get("decision", "")
    return BoardEntry(
        view=view,
        replica=fields.get("replica", ""),
        status=BoardStatus(fields["status"]),
        decision=ApprovalDecision(decision) if decision else None,
        operator=fields.get("operator", ""),
    )
