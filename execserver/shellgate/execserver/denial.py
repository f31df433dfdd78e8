"""Streaming input to the sandbox-denial heuristic: markers found in output as it flows."""

from __future__ import annotations

from shellgate.common.process.base import ExitStatus, Stream
from shellgate.common.sandbox import DENIAL_MARKERS, is_sandbox_denied

_MARKERS = tuple(m.encode() for m in DENIAL_MARKERS)
_OVERLAP = max(len(m) for m in _MARKERS) - 1


class DenialScanner:
    """Remembers whether any denial marker appeared in stdout, stderr or their concatenation.

    Output is scanned once as it is produced (retention may evict it later), with a short
    tail kept per stream so a marker split across chunks is still found. Markers are ASCII,
    so lowering bytes matches the heuristic's case-insensitive text search.
    """

    def __init__(self) -> None:
        self._tails: dict[Stream, bytes] = {}
        self._stderr_head = b""
        self._marker: str = ""

    def feed(self, stream: Stream, data: bytes) -> None:
        """Scan one chunk (cheap once a marker has been seen)."""
        if self._marker:
            return
        lowered = data.lower()
        if stream is Stream.STDERR and len(self._stderr_head) < _OVERLAP:
            self._stderr_head = (self._stderr_head + lowered)[:_OVERLAP]
        window = self._tails.get(stream, b"") + lowered
        for marker in _MARKERS:
            if marker in window:
                self._marker = marker.decode()
                return
        self._tails[stream] = window[-_OVERLAP:]

    def _seen(self) -> str:
        if self._marker:
            return self._marker
        # The aggregate is stdout followed by stderr: a marker may straddle the seam.
        seam = self._tails.get(Stream.STDOUT, b"") + self._stderr_head
        for marker in _MARKERS:
            if marker in seam:
                return marker.decode()
        return ""

    def denied(self, status: ExitStatus, timed_out: bool, sandboxed: bool) -> bool:
        """The spec 05 §1.3 verdict for this output (never for timeouts or lost processes)."""
        if timed_out or status.environment_lost is not None:
            return False
        marker = self._seen()
        outputs = {"aggregate": marker} if marker else {}
        return is_sandbox_denied(status.shell_code, status.signal, outputs, sandboxed)
