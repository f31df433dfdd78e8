"""What a replica does for the shared store's sake: after an outage, after a data loss, and
on every sweep (spec 06 §9). Functions over the registry's threads and its store, so the
registry keeps only the thread life cycle.

* `publish_held`: sessions kept in a replica's table while the store was down are
  published (a thread first seen during the outage is created, or joins the thread Redis
  has, first);
* `republish`: after Redis lost its data (restart without AOF), the replica's threads and
  the session records it knows are stored again;
* `keep_sessions_alive`: the daemon owner TTL of live threads' shared sessions is renewed.
"""

from __future__ import annotations

from collections.abc import Mapping

from shellgate.router.runtime.store.shared_state import SharedState
from shellgate.router.runtime.threads.state import ThreadState

__all__ = ["keep_sessions_alive", "publish_held", "republish"]


async def publish_held(threads: Mapping[str, ThreadState], shared: SharedState) -> int:
    """Publish the sessions held while the store was down; how many were."""
    count = 0
    for thread_id, state in list(threads.items()):
        if not state.sessions.holding:
            continue
        if state.provisional:
            # First seen here during the outage: created with this generation if Redis has
            # none, else joining the one Redis has, as the thread's next call would (_sync).
            state.generation = await shared.ensure_thread(thread_id, state.generation)
            state.provisional = False
        count += await state.sessions.publish_held()
    return count


async def republish(threads: Mapping[str, ThreadState], shared: SharedState) -> None:
    """After the store lost its data: re-create the threads and their session records."""
    for thread_id, state in list(threads.items()):
        if not state.provisional:  # never shared: re-created by its next call
            await shared.restore_thread(thread_id, state.generation)
            await state.sessions.republish()


async def keep_sessions_alive(threads: Mapping[str, ThreadState], shared: SharedState) -> int:
    """Renew the daemon owner TTL of the shared sessions of threads still alive; how many.

    Every router does it for the threads it holds, so a session lives as long as its thread
    does (not just its daemon owner TTL past the last poll). Sessions the store monitor's
    recovery could not publish are published first.
    """
    if not shared.distributed:
        return 0
    await publish_held(threads, shared)
    count = 0
    for thread_id, state in list(threads.items()):
        if await shared.thread_alive(thread_id):
            count += await state.sessions.keep_alive()
    return count
