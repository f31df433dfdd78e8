"""shellgate's Python client: async (grpc.aio) and blocking clients for ToolRouterService.

A harness loop, with the blocking client::

    from shellgate.client import Client, Completed, Decision, turn_context

    with Client("127.0.0.1:50051", token=TOKEN) as client:   # one client ≈ one thread
        tools = [t.spec for t in client.list_tools() if not t.hidden]   # → the model
        done = client.run(model_item_json, turn_context(approval_policy="on-request"),
                          approver=lambda ask: Decision.APPROVED if ok(ask.argv) else "denied")
        conversation.append(done.output_item)                # exactly one output per call

`execute`/`resume` yield the typed events one by one (projection, approval_required,
started, output, terminal_interaction, completed). A harness that cancels a call itself
pairs it with `abort_output_item(call_id, tool_name, elapsed)`. Create an AsyncClient
inside the running event loop.

Also: `wait_until_ready()` right after launching a router; `write_stdin_item` (poll or type
into an exec_command session) and `apply_patch_item` build the other tools' calls; the
channel keeps quiet streams alive and retries the idempotent unary RPCs on UNAVAILABLE
(`ClientOptions.keepalive_time_s`, `retry_attempts`); failures raise `ClientError`
subclasses carrying the router's stable `reason`. Installable alone as `shellgate-client`.
"""

from __future__ import annotations

from shellgate.client.abort import abort_message, abort_output_item
from shellgate.client.aio import Approver, AsyncClient
from shellgate.client.errors import (
    ClientError,
    DeadlineExceededError,
    FailedPreconditionError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    ResourceExhaustedError,
    UnauthenticatedError,
    UnavailableError,
)
from shellgate.client.events import (
    ApprovalKind,
    ApprovalPending,
    ApprovalRequired,
    ApprovalWaiting,
    Completed,
    Decision,
    Event,
    Output,
    ProjectionEvent,
    Started,
    TerminalInteraction,
    Termination,
)
from shellgate.client.items import (
    CallIdentity,
    apply_patch_item,
    call_identity,
    custom_tool_call_item,
    exec_command_item,
    function_call_item,
    new_call_id,
    shell_command_item,
    to_tool_call_item,
    write_stdin_item,
)
from shellgate.client.options import DEFAULT_TARGET, ClientOptions, TlsOptions, token_from_file
from shellgate.client.records import (
    EndThreadResult,
    EnvironmentInfo,
    RulesError,
    ServerInfo,
    SessionInfo,
    ToolSpec,
)
from shellgate.client.requests import new_thread_id
from shellgate.client.sync import Client, SyncApprover
from shellgate.client.turn import to_turn_context, turn_context, turn_from_json

__all__ = [
    "DEFAULT_TARGET",
    "ApprovalKind",
    "ApprovalPending",
    "ApprovalRequired",
    "ApprovalWaiting",
    "Approver",
    "AsyncClient",
    "CallIdentity",
    "Client",
    "ClientError",
    "ClientOptions",
    "Completed",
    "DeadlineExceededError",
    "Decision",
    "EndThreadResult",
    "EnvironmentInfo",
    "Event",
    "FailedPreconditionError",
    "InvalidArgumentError",
    "NotFoundError",
    "Output",
    "PermissionDeniedError",
    "ProjectionEvent",
    "ResourceExhaustedError",
    "RulesError",
    "ServerInfo",
    "SessionInfo",
    "Started",
    "SyncApprover",
    "TerminalInteraction",
    "Termination",
    "TlsOptions",
    "ToolSpec",
    "UnauthenticatedError",
    "UnavailableError",
    "abort_message",
    "abort_output_item",
    "apply_patch_item",
    "call_identity",
    "custom_tool_call_item",
    "exec_command_item",
    "function_call_item",
    "new_call_id",
    "new_thread_id",
    "shell_command_item",
    "to_tool_call_item",
    "to_turn_context",
    "token_from_file",
    "turn_context",
    "turn_from_json",
    "write_stdin_item",
]
