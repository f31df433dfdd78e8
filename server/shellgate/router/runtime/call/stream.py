"""One call's events on their way to the Execute client: bounded, coalesced, paced (spec 06 §4).

A client that reads slowly must neither make the router buffer without bound nor change
what the model sees: the final `completed` text is built from the process's own capture,
so only the streamed `output` events are shaped here, over one `OutputChannel`:

* Budget: at most MAX_QUEUED_OUTPUT_BYTES of output waits for the client; past it
  chunks are dropped (seq gaps show it) and counted, and the driver logs the exact total.
  Other events carry no bytes and are never dropped.
* Coalescing (classic commands only): output arriving while the client is behind is
  appended to the newest queued chunk of the same element and stream, up to
  COALESCED_OUTPUT_BYTES, and later seqs shift down so they stay contiguous; a fast
  producer then costs one message per backlog instead of one per pipe read.
* Pacing (every call): `room` holds the call's output reader (the classic pump, or the
  unified session's pump while this call is attached to it) while PACED_OUTPUT_BYTES
  wait, for as long as the client takes: an attached client never loses a byte (the pipe
  fills and the child blocks on its write; a remote daemon is held back through gRPC
  flow control). A client that stalls forever holds the process until the call ends: a
  classic command's timeout kills it, a unified call ends at its yield deadline (the
  session is then detached and reads on into its head/tail buffer), and a cancelled
  stream cancels the call. Drops at the budget remain only for output the reader emits
  without asking for room: a classic command's post-exit drain (2 s, spec 05 §1.3).
"""

from __future__ import annotations

from shellgate.common.output_channel import OutputChannel, RoomCheck, Sent
from shellgate.router.projection import ProjectedCall, ShellCall
from shellgate.router.runtime.call.events import (
    ApprovalRequiredEvent,
    CompletedEvent,
    ExecuteEvent,
    OutputEvent,
)

__all__ = [
    "COALESCED_OUTPUT_BYTES",
    "MAX_QUEUED_OUTPUT_BYTES",
    "PACED_OUTPUT_BYTES",
    "CallStream",
    "coalesces",
]

# Streamed output waiting for a slow client, per call (spec 06 §4 keeps the final text).
MAX_QUEUED_OUTPUT_BYTES = 8 * 1024 * 1024
# Largest message a backlog of output is merged into (well under gRPC's 4 MiB default).
COALESCED_OUTPUT_BYTES = 1024 * 1024
# A call's output reader pauses while this much output waits for the client (two full
# merged messages), however long the client takes, so a fast producer is paced by the
# client instead of having its stream output dropped at MAX_QUEUED_OUTPUT_BYTES.
PACED_OUTPUT_BYTES = 2 * 1024 * 1024


def coalesces(projected: ProjectedCall) -> bool:
    """Whether a call's output may be merged: classic commands only.

    Their seqs are per call, so a merged chunk can take one seq and later ones shift down.
    A unified session's seqs continue across calls, where a shift would read as lost output.
    """
    outcome = projected.outcome
    return isinstance(outcome, ShellCall) and outcome.tool != "exec_command"


class CallStream:
    """The bounded queue between a running call (`emit`) and its Execute stream (`receive`)."""

    def __init__(self, *, coalesce: bool) -> None:
        self._coalesce = coalesce
        self._channel: OutputChannel[ExecuteEvent] = OutputChannel(
            max_bytes=MAX_QUEUED_OUTPUT_BYTES,
            coalesce_bytes=COALESCED_OUTPUT_BYTES if coalesce else 0,
            pace_bytes=PACED_OUTPUT_BYTES,
            pace_stall_s=None,
        )
        # Per element: chunks merged into an earlier one (later seqs shift down by this),
        # and the original seq of the last chunk queued (a merge must not bridge a drop).
        self._absorbed: dict[int, int] = {}
        self._last_seq: dict[int, int] = {}
        self.ended = False

    @property
    def room(self) -> RoomCheck:
        """The output reader's pacing hook: an awaitable while the client is behind."""
        return self._channel.room

    @property
    def dropped_bytes(self) -> int:
        """Output bytes not streamed because the client was too far behind."""
        return self._channel.dropped_bytes

    @property
    def dropped_chunks(self) -> int:
        """Output chunks not streamed (their seqs are missing on the stream)."""
        return self._channel.dropped_chunks

    def emit(self, event: ExecuteEvent) -> None:
        """Queue one event from the call (never waits; output past the budget is dropped)."""
        if self._channel.closed:
            # A listener that outlived its call (it is detached in a `finally` that may run
            # after the end): nobody reads this stream any more.
            return
        self.ended = self.ended or isinstance(event, CompletedEvent | ApprovalRequiredEvent)
        if not isinstance(event, OutputEvent):
            self._channel.send_nowait(event)
        elif not self._coalesce:
            self._channel.send_nowait(event, event.data)
        else:
            index = event.element_index
            skipped = self._absorbed.get(index, 0)
            # The entry keeps the first chunk's event, renumbered past earlier merges.
            head = OutputEvent(index, event.stream, event.seq - skipped, event.data) if skipped else event
            sent = self._channel.send_nowait(
                head, event.data, key=(index, event.stream),
                contiguous=self._last_seq.get(index) == event.seq - 1,
            )  # fmt: skip
            if sent is Sent.MERGED:
                self._absorbed[index] = skipped + 1
            if sent is not Sent.DROPPED:
                self._last_seq[index] = event.seq

    def close(self) -> None:
        """The call is over: `receive` returns None once the queue is drained."""
        self._channel.close()

    async def receive(self) -> ExecuteEvent | None:
        """The next event (merged output joined into one), waiting; None at the end."""
        item = await self._channel.receive()
        if item is None:
            return None
        if item.parts == 1:
            return item.meta
        head = item.meta
        assert isinstance(head, OutputEvent)
        return OutputEvent(head.element_index, head.stream, head.seq, item.data)
