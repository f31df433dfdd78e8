"""Project answers reused for the exact same request: keyed on the item's bytes, valid only
for the very turn and host objects they were computed with.

`Project` is a pure function of the item, the turn (the router's cached RouterTurn: thread,
turn message, environment views, the caller's environments) and the host context (rules
object, parent environment, memo — rebuilt on every rules reload). The router keeps one
RouterTurn and one HostContext per distinct input and replaces them when an input
changes, so an entry computed with the same two objects (identity, not equality) is the
answer `project` would give again, byte for byte. Only items projected on the event loop
are kept (local environments, no apply_patch, at most INLINE_PROJECT_MAX_CHARS): their
projection reads no file and no remote state. The loop and the Project door's workers
share one cache (a lock around each lookup and insertion).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

__all__ = ["ProjectCache"]

# Entries and bytes kept (least recently used dropped first).
MAX_ENTRIES = 2048
MAX_BYTES = 16 * 1024 * 1024


class ProjectCache:
    """Serialized ProjectResponses by request item bytes, for one (turn, host) each."""

    def __init__(self, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES) -> None:
        self._entries: OrderedDict[bytes, tuple[object, object, bytes]] = OrderedDict()
        self._max_entries = max_entries
        self._max_bytes = max_bytes
        self._bytes = 0
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()

    def get(self, key: bytes, turn: object, host: object) -> bytes | None:
        """The stored answer when it was computed with these very turn and host objects."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or entry[0] is not turn or entry[1] is not host:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return entry[2]

    def put(self, key: bytes, turn: object, host: object, answer: bytes) -> None:
        """Keep `answer` for `key` (replacing an entry of another turn or host)."""
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= len(key) + len(old[2])
            self._entries[key] = (turn, host, answer)
            self._bytes += len(key) + len(answer)
            while len(self._entries) > self._max_entries or self._bytes > self._max_bytes:
                dropped_key, dropped = self._entries.popitem(last=False)
                self._bytes -= len(dropped_key) + len(dropped[2])
