"""Hand the memory of a huge request back to the OS once the call has ended (both daemons).

A request of tens of MiB is held several times over while it is handled: the received
bytes, the decoded message, and the Python strings made from its fields. When the handler
rejects it, grpc.aio keeps the abort exception on the call's state, and that exception's
traceback reaches the handler's frames (the request among their locals) and, through the
servicer context, the call state again: a reference cycle. Only a full cyclic collection
frees it, and an idle daemon may not run one for hours, so each rejected 60 MiB Start used
to keep ~200 MiB alive. What glibc then frees in small pieces (grpc's receive slices) stays
in its heap until `malloc_trim`.

So after a call whose request was at least `threshold_bytes` ends, a full `gc.collect()`
and `malloc_trim(0)` run on the event loop a moment later, at most once per
`min_interval_s` (a burst of huge requests costs one collection per interval, not one each;
the last of a burst is still followed by one).
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import logging
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

MIB = 1024 * 1024
# Requests at least this large are followed by a release; normal calls are far smaller.
DEFAULT_THRESHOLD_BYTES = MIB
# Collections run at most this often (a full collection of a large heap takes tens of ms).
DEFAULT_MIN_INTERVAL_S = 1.0
# The call's state is dropped by grpc just after its done callbacks run; wait that long.
SETTLE_S = 0.05


def _load_malloc_trim() -> Callable[[int], int] | None:
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None  # not glibc (musl has no malloc_trim): the collection alone must do
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


_MALLOC_TRIM = _load_malloc_trim()


def release_now() -> None:
    """Collect reference cycles and return free heap pages to the OS (blocking, ~tens of ms)."""
    gc.collect()
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


class MemoryRelease:
    """Runs `release_now` shortly after huge calls end, rate-limited."""

    def __init__(
        self,
        threshold_bytes: int = DEFAULT_THRESHOLD_BYTES,
        min_interval_s: float = DEFAULT_MIN_INTERVAL_S,
    ) -> None:
        self.threshold_bytes = threshold_bytes
        self.min_interval_s = min_interval_s
        self._last = float("-inf")
        self._pending: asyncio.TimerHandle | None = None
        self.releases = 0

    def is_huge(self, size: int) -> bool:
        """Whether a request of `size` bytes is followed by a release."""
        return size >= self.threshold_bytes

    def call_ended(self) -> None:
        """A huge call ended: schedule one release (unless one is already scheduled)."""
        if self._pending is not None:
            return  # the scheduled one runs after this call too
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop (the server is shutting down): nothing to schedule on
        delay = max(SETTLE_S, self._last + self.min_interval_s - time.monotonic())
        self._pending = loop.call_later(delay, self._run)

    def _run(self) -> None:
        self._pending = None
        self._last = time.monotonic()
        release_now()
        self.releases += 1
        log.debug("released memory after a huge request (%d so far)", self.releases)
