"""Request construction shared by the async and sync clients."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from shellgate.client.events import Decision
from shellgate.client.items import ItemLike, to_tool_call_item
from shellgate.client.turn import TurnLike, to_turn_context
from shellgate.v1 import router_pb2

__all__ = [
    "ThreadBook",
    "execute_request",
    "new_thread_id",
    "project_request",
    "resume_request",
]


def new_thread_id() -> str:
    """A fresh thread id (fits the router's `[A-Za-z0-9._:-]{1,128}` rule)."""
    return f"thread-{uuid.uuid4().hex}"


def project_request(item: ItemLike, turn: TurnLike, thread_id: str) -> router_pb2.ProjectRequest:
    """A ProjectRequest."""
    return router_pb2.ProjectRequest(
        thread_id=thread_id, turn=to_turn_context(turn), item=to_tool_call_item(item)
    )


def execute_request(item: ItemLike, turn: TurnLike, thread_id: str) -> router_pb2.ExecuteRequest:
    """An ExecuteRequest for a new item."""
    return router_pb2.ExecuteRequest(
        thread_id=thread_id, turn=to_turn_context(turn), item=to_tool_call_item(item)
    )


def resume_request(
    approval_id: str, decision: Decision | str | int, thread_id: str
) -> router_pb2.ExecuteRequest:
    """An ExecuteRequest resuming a pending approval."""
    resume = router_pb2.ResumeCall(
        approval_id=approval_id,
        decision=Decision.parse(decision).value,
    )
    return router_pb2.ExecuteRequest(thread_id=thread_id, resume=resume)


class ThreadBook:
    """The client's default thread and the thread of every approval id it has seen."""

    # Bounded: a harness that never resumes must not grow the map forever.
    MAX_REMEMBERED_APPROVALS = 4096

    def __init__(self, default_thread_id: str | None) -> None:
        self.default = default_thread_id or new_thread_id()
        self._approvals: dict[str, str] = {}

    def pick(self, thread_id: str | None) -> str:
        """The given thread id, else the client's default."""
        return thread_id if thread_id is not None else self.default

    def remember(self, approval_id: str, thread_id: str) -> None:
        """Note which thread an approval belongs to (so resume needs no thread id)."""
        if len(self._approvals) >= self.MAX_REMEMBERED_APPROVALS:
            self._approvals.pop(next(iter(self._approvals)))
        self._approvals[approval_id] = thread_id

    def for_approval(self, approval_id: str, thread_id: str | None) -> str:
        """The thread to resume an approval in."""
        if thread_id is not None:
            return thread_id
        return self._approvals.pop(approval_id, self.default)


def unbatched(
    response: router_pb2.ExecuteResponse,
) -> Sequence[router_pb2.ExecuteResponse]:
    """The events of one Execute message: a coalesced stream's `batch` holds several."""
    if response.WhichOneof("event") == "batch":
        return response.batch.events
    return (response,)
