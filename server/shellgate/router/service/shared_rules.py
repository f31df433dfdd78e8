"""The shared amendments layer (scaled mode): prefix rules approved on any replica, in Redis.

An `approved_with_amendment` decision appends its prefix rule to the approving replica's
`default.rules` (as on one router) and to the Redis list `{prefix}amendments`; a notice on
the replica bus makes every replica re-read the list, and each replica also re-reads it
when its subscription (re)starts and every `redis_bus.REFRESH_S` seconds. The list is
applied on top of the rules files (`PolicyStore.set_shared_prefix_rules`), so a replica
started later, or restarted, loads every amendment from Redis at start. Each item carries
a `RecordSeal` over its rule: an item pushed by anyone but a replica is refused and reported.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable
from typing import Any, cast

from shellgate.common.errors import SharedStateUnavailableError
from shellgate.router.runtime.store.record_seal import RecordSeal
from shellgate.router.runtime.store.redis_bus import RedisBus
from shellgate.router.runtime.store.redis_link import RedisLink
from shellgate.router.service.rules_store import PolicyStore

__all__ = ["AMENDMENTS_NOTICE", "SharedAmendments"]

_log = logging.getLogger(__name__)
AMENDMENTS_NOTICE = "amendments"
# An amendment list longer than this is refused on read (a store filled by someone else).
MAX_SHARED_AMENDMENTS = 10_000


class SharedAmendments:
    """Publishes approved prefix rules to Redis and applies the list to a PolicyStore."""

    def __init__(
        self,
        link: RedisLink,
        *,
        prefix: str,
        bus: RedisBus,
        store: PolicyStore,
        seal: RecordSeal,
    ) -> None:
        # The store's one gate: a Redis failure is counted and logged once per outage.
        self._link = link
        self._r = link.client
        self._seal = seal
        # Items already reported as forged (each periodic refresh would report them again).
        self._reported: set[bytes] = set()
        self.key = f"{prefix}amendments"
        self._bus = bus
        self._store = store
        store.share = self.add
        bus.on_notice(AMENDMENTS_NOTICE, self.refresh)

    async def add(self, prefix: tuple[str, ...]) -> None:
        """Store an approved prefix rule for every replica and tell them (best effort:
        the approving replica already applied it and wrote it to its rules file)."""
        rule = json.dumps(list(prefix), separators=(",", ":"))
        item = json.dumps({"rule": rule, "seal": self._seal.seal("amendment", rule)})
        try:
            await self._link.run(
                "amendments", lambda: cast(Awaitable[Any], self._r.rpush(self.key, item))
            )
        except SharedStateUnavailableError as exc:
            # Lost for the other replicas, not only delayed: worth its own line.
            _log.warning("amendment %s not shared: %s", list(prefix), exc)
            return
        await self._bus.notice(AMENDMENTS_NOTICE)

    async def refresh(self) -> None:
        """Re-read the list and apply it (SharedStateUnavailableError keeps the current layer)."""
        # Down: SharedStateUnavailableError, counted by the store's monitor; the bus retries.
        raw = await self._link.run(
            "amendments",
            lambda: cast(
                Awaitable[list[bytes]], self._r.lrange(self.key, 0, MAX_SHARED_AMENDMENTS - 1)
            ),
        )
        rules: list[tuple[str, ...]] = []
        for item in raw:
            value = self._unsealed(item)
            if isinstance(value, list) and value and all(isinstance(t, str) for t in value):
                rules.append(tuple(value))
        self._store.set_shared_prefix_rules(rules)

    def _unsealed(self, item: bytes) -> object:
        """The rule of an item whose seal verifies; None (reported) otherwise."""
        try:
            wrapper = json.loads(item)
            rule, seal = str(wrapper["rule"]), str(wrapper["seal"])
        except (ValueError, KeyError, TypeError):
            rule, seal = "", ""
        if not self._seal.verify(seal, "amendment", rule):
            if item not in self._reported and len(self._reported) < MAX_SHARED_AMENDMENTS:
                self._reported.add(item)
                self._seal.forged("shared amendment", item=item[:200].decode(errors="replace"))
            return None
        return json.loads(rule)
