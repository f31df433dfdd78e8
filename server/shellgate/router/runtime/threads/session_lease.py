"""The poll lease of a shared remote session: one poller at a time across all routers.

A poll (exec_command's first yield, write_stdin) holds the session's lease while it reads
the daemon's output and until it has stored the consumed seq, so two concurrent polls of
one session never return the same bytes twice or skip any: the second waits for the first
to finish, as the second poll of one router waits behind the same output buffer. The lease
is a Redis key taken with SET NX PX and a random token, renewed while the poll runs and
released with a compare-and-delete, so a router that dies mid-poll frees it after
`LEASE_TTL_MS` at most.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time

from shellgate.common.errors import SharedStateUnavailableError
from shellgate.common.tasks import cancel_and_wait
from shellgate.router.runtime.store.shared_state import SharedState

__all__ = ["LEASE_TTL_MS", "SessionBusyError", "SessionLease"]

# How long a lease outlives its holder; renewed every third of it while the poll runs.
LEASE_TTL_MS = 6_000
# How often a waiting poll retries the lease (it is short-lived: a poll's yield).
_RETRY_S = 0.05
# How often a waiting poll renews its thread's idle TTL.
_TOUCH_S = 1.0
_log = logging.getLogger(__name__)


class SessionBusyError(Exception):
    """Another poll held the session's lease for longer than this poll may wait."""

    def __init__(self, session_id: int) -> None:
        super().__init__(
            f"session {session_id} is busy: another call is polling it; retry when it returns"
        )
        self.session_id = session_id


class SessionLease:
    """A held lease on one session; renewed in the background until `release`."""

    def __init__(self, shared: SharedState, thread_id: str, session_id: int, token: str) -> None:
        self._shared = shared
        self._thread_id = thread_id
        self.session_id = session_id
        self.token = token
        # The stored consumed_seq this poll started from (the compare-and-set's expectation).
        self.expected_seq = 0
        # Owned by this lease: release() cancels and awaits it.
        self._renewer = asyncio.create_task(self._renew(), name=f"lease-renew-{session_id}")

    @classmethod
    async def acquire(
        cls, shared: SharedState, thread_id: str, session_id: int, wait_s: float
    ) -> SessionLease:
        """Take the lease, waiting up to `wait_s` for its holder; SessionBusyError after."""
        token = secrets.token_hex(16)
        start = time.monotonic()
        deadline = start + max(0.0, wait_s)
        touched = start
        while not await shared.acquire_lease(thread_id, session_id, token, LEASE_TTL_MS):
            now = time.monotonic()
            if now >= deadline:
                with contextlib.suppress(Exception):
                    await shared.release_lease(thread_id, session_id, token)  # leave the queue
                raise SessionBusyError(session_id)
            if now - touched >= _TOUCH_S:
                # Waiting is use of the thread: it must not expire under a queued poll.
                touched = now
                await shared.thread_generation(thread_id)
            await asyncio.sleep(_RETRY_S)
        return cls(shared, thread_id, session_id, token)

    async def _renew(self) -> None:
        while True:
            await asyncio.sleep(LEASE_TTL_MS / 3000)
            try:
                held = await self._shared.renew_lease(
                    self._thread_id, self.session_id, self.token, LEASE_TTL_MS
                )
            except Exception as exc:
                # The store is briefly unreachable: the next renewal may still make it. An
                # outage is its monitor's to log (once), not every held lease's each second.
                down = isinstance(exc, SharedStateUnavailableError)
                _log.log(logging.DEBUG if down else logging.WARNING,
                         "renewing the lease of session %d failed", self.session_id)  # fmt: skip
                continue
            if not held:
                # Expired (e.g. the store paused longer than the TTL): the compare-and-set
                # of the consumed seq refuses this poll's update, so nothing is duplicated.
                _log.warning("lost the poll lease of session %d", self.session_id)
                return

    async def release(self) -> None:
        """Stop renewing and give the lease back (errors are logged: it expires anyway)."""
        await cancel_and_wait(self._renewer, log=_log)
        with contextlib.suppress(Exception):
            await self._shared.release_lease(self._thread_id, self.session_id, self.token)
