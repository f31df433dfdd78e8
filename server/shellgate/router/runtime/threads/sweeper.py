"""The periodic thread sweep: end idle threads, drop expired parked calls and keep live
threads' shared sessions alive on their daemons (spec 06 §2, §3, §9)."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from shellgate.common.errors import SharedStateUnavailableError
from shellgate.router.runtime.threads.registry import ThreadStore

__all__ = ["DEFAULT_SWEEP_INTERVAL_MS", "run_thread_sweeper", "sweep_once"]

DEFAULT_SWEEP_INTERVAL_MS = 30_000
_log = logging.getLogger(__name__)


async def sweep_once(store: ThreadStore) -> tuple[list[str], int]:
    """One pass: the ids of threads ended for idleness and how many approvals expired."""
    ended = await store.sweep_idle()
    expired = await store.expire_pending()
    await store.keep_sessions_alive()
    return ended, expired


async def run_thread_sweeper(
    store: ThreadStore, interval_ms: int, stop_event: asyncio.Event
) -> None:
    """Sweep every `interval_ms` until `stop_event` is set; a failing pass is logged, not fatal."""
    interval_s = max(interval_ms, 1) / 1000
    while not stop_event.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop_event.wait(), interval_s)
        if stop_event.is_set():
            return
        try:
            ended, expired = await sweep_once(store)
        except SharedStateUnavailableError:
            # The shared store is down: its monitor logs the outage once; next interval.
            continue
        except Exception:
            _log.exception("thread sweep failed")
            continue
        if ended or expired:
            _log.info("thread sweep: %d idle threads ended, %d approvals expired",
                      len(ended), expired)  # fmt: skip
