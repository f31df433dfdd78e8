from shellgate.v1 import common_pb2 as _common_pb2
from shellgate.v1 import exec_pb2 as _exec_pb2
from shellgate.v1 import projection_pb2 as _projection_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ApprovalDecision(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    APPROVAL_DECISION_UNSPECIFIED: _ClassVar[ApprovalDecision]
    APPROVAL_DECISION_APPROVED: _ClassVar[ApprovalDecision]
    APPROVAL_DECISION_APPROVED_FOR_SESSION: _ClassVar[ApprovalDecision]
    APPROVAL_DECISION_APPROVED_WITH_AMENDMENT: _ClassVar[ApprovalDecision]
    APPROVAL_DECISION_DENIED: _ClassVar[ApprovalDecision]
    APPROVAL_DECISION_ABORT: _ClassVar[ApprovalDecision]

class ApprovalKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    APPROVAL_KIND_UNSPECIFIED: _ClassVar[ApprovalKind]
    APPROVAL_KIND_EXEC_POLICY: _ClassVar[ApprovalKind]
    APPROVAL_KIND_SANDBOX_RETRY: _ClassVar[ApprovalKind]
    APPROVAL_KIND_APPLY_PATCH: _ClassVar[ApprovalKind]
    APPROVAL_KIND_NETWORK: _ClassVar[ApprovalKind]

class TerminationReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TERMINATION_REASON_UNSPECIFIED: _ClassVar[TerminationReason]
    TERMINATION_REASON_EXITED: _ClassVar[TerminationReason]
    TERMINATION_REASON_SIGNALED: _ClassVar[TerminationReason]
    TERMINATION_REASON_TIMED_OUT: _ClassVar[TerminationReason]
    TERMINATION_REASON_YIELDED: _ClassVar[TerminationReason]
    TERMINATION_REASON_REJECTED: _ClassVar[TerminationReason]
    TERMINATION_REASON_FORBIDDEN: _ClassVar[TerminationReason]
    TERMINATION_REASON_TOOL_ERROR: _ClassVar[TerminationReason]
    TERMINATION_REASON_SPAWN_FAILED: _ClassVar[TerminationReason]
    TERMINATION_REASON_CANCELLED: _ClassVar[TerminationReason]
    TERMINATION_REASON_ENVIRONMENT_LOST: _ClassVar[TerminationReason]
    TERMINATION_REASON_NO_TOOL_CALL: _ClassVar[TerminationReason]
APPROVAL_DECISION_UNSPECIFIED: ApprovalDecision
APPROVAL_DECISION_APPROVED: ApprovalDecision
APPROVAL_DECISION_APPROVED_FOR_SESSION: ApprovalDecision
APPROVAL_DECISION_APPROVED_WITH_AMENDMENT: ApprovalDecision
APPROVAL_DECISION_DENIED: ApprovalDecision
APPROVAL_DECISION_ABORT: ApprovalDecision
APPROVAL_KIND_UNSPECIFIED: ApprovalKind
APPROVAL_KIND_EXEC_POLICY: ApprovalKind
APPROVAL_KIND_SANDBOX_RETRY: ApprovalKind
APPROVAL_KIND_APPLY_PATCH: ApprovalKind
APPROVAL_KIND_NETWORK: ApprovalKind
TERMINATION_REASON_UNSPECIFIED: TerminationReason
TERMINATION_REASON_EXITED: TerminationReason
TERMINATION_REASON_SIGNALED: TerminationReason
TERMINATION_REASON_TIMED_OUT: TerminationReason
TERMINATION_REASON_YIELDED: TerminationReason
TERMINATION_REASON_REJECTED: TerminationReason
TERMINATION_REASON_FORBIDDEN: TerminationReason
TERMINATION_REASON_TOOL_ERROR: TerminationReason
TERMINATION_REASON_SPAWN_FAILED: TerminationReason
TERMINATION_REASON_CANCELLED: TerminationReason
TERMINATION_REASON_ENVIRONMENT_LOST: TerminationReason
TERMINATION_REASON_NO_TOOL_CALL: TerminationReason

class ListToolsRequest(_message.Message):
    __slots__ = ("thread_id", "turn")
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    thread_id: str
    turn: _common_pb2.TurnContext
    def __init__(self, thread_id: _Optional[str] = ..., turn: _Optional[_Union[_common_pb2.TurnContext, _Mapping]] = ...) -> None: ...

class ToolSpec(_message.Message):
    __slots__ = ("name", "json", "hidden")
    NAME_FIELD_NUMBER: _ClassVar[int]
    JSON_FIELD_NUMBER: _ClassVar[int]
    HIDDEN_FIELD_NUMBER: _ClassVar[int]
    name: str
    json: str
    hidden: bool
    def __init__(self, name: _Optional[str] = ..., json: _Optional[str] = ..., hidden: _Optional[bool] = ...) -> None: ...

class ListToolsResponse(_message.Message):
    __slots__ = ("tools",)
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    tools: _containers.RepeatedCompositeFieldContainer[ToolSpec]
    def __init__(self, tools: _Optional[_Iterable[_Union[ToolSpec, _Mapping]]] = ...) -> None: ...

class ProjectRequest(_message.Message):
    __slots__ = ("thread_id", "turn", "item")
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    ITEM_FIELD_NUMBER: _ClassVar[int]
    thread_id: str
    turn: _common_pb2.TurnContext
    item: _common_pb2.ToolCallItem
    def __init__(self, thread_id: _Optional[str] = ..., turn: _Optional[_Union[_common_pb2.TurnContext, _Mapping]] = ..., item: _Optional[_Union[_common_pb2.ToolCallItem, _Mapping]] = ...) -> None: ...

class ProjectResponse(_message.Message):
    __slots__ = ("projection",)
    PROJECTION_FIELD_NUMBER: _ClassVar[int]
    projection: _projection_pb2.Projection
    def __init__(self, projection: _Optional[_Union[_projection_pb2.Projection, _Mapping]] = ...) -> None: ...

class ResumeCall(_message.Message):
    __slots__ = ("approval_id", "decision")
    APPROVAL_ID_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    approval_id: str
    decision: ApprovalDecision
    def __init__(self, approval_id: _Optional[str] = ..., decision: _Optional[_Union[ApprovalDecision, str]] = ...) -> None: ...

class ExecuteRequest(_message.Message):
    __slots__ = ("thread_id", "turn", "item", "resume", "coalesce_ms")
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    ITEM_FIELD_NUMBER: _ClassVar[int]
    RESUME_FIELD_NUMBER: _ClassVar[int]
    COALESCE_MS_FIELD_NUMBER: _ClassVar[int]
    thread_id: str
    turn: _common_pb2.TurnContext
    item: _common_pb2.ToolCallItem
    resume: ResumeCall
    coalesce_ms: int
    def __init__(self, thread_id: _Optional[str] = ..., turn: _Optional[_Union[_common_pb2.TurnContext, _Mapping]] = ..., item: _Optional[_Union[_common_pb2.ToolCallItem, _Mapping]] = ..., resume: _Optional[_Union[ResumeCall, _Mapping]] = ..., coalesce_ms: _Optional[int] = ...) -> None: ...

class ExecuteBatch(_message.Message):
    __slots__ = ("events",)
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[ExecuteResponse]
    def __init__(self, events: _Optional[_Iterable[_Union[ExecuteResponse, _Mapping]]] = ...) -> None: ...

class ExecuteOnceRequest(_message.Message):
    __slots__ = ("request",)
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    request: ExecuteRequest
    def __init__(self, request: _Optional[_Union[ExecuteRequest, _Mapping]] = ...) -> None: ...

class ExecuteOnceResponse(_message.Message):
    __slots__ = ("events",)
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[ExecuteResponse]
    def __init__(self, events: _Optional[_Iterable[_Union[ExecuteResponse, _Mapping]]] = ...) -> None: ...

class ApprovalRequired(_message.Message):
    __slots__ = ("approval_id", "call_id", "kind", "element_index", "argv", "cwd", "environment_id", "reason", "proposed_amendment", "approval_key_digest", "available_decisions", "element", "expires_in_ms", "network_approval_context")
    APPROVAL_ID_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    ELEMENT_INDEX_FIELD_NUMBER: _ClassVar[int]
    ARGV_FIELD_NUMBER: _ClassVar[int]
    CWD_FIELD_NUMBER: _ClassVar[int]
    ENVIRONMENT_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    PROPOSED_AMENDMENT_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_KEY_DIGEST_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_DECISIONS_FIELD_NUMBER: _ClassVar[int]
    ELEMENT_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_IN_MS_FIELD_NUMBER: _ClassVar[int]
    NETWORK_APPROVAL_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    approval_id: str
    call_id: str
    kind: ApprovalKind
    element_index: int
    argv: _containers.RepeatedScalarFieldContainer[str]
    cwd: str
    environment_id: str
    reason: str
    proposed_amendment: _projection_pb2.ExecPolicyAmendment
    approval_key_digest: str
    available_decisions: _containers.RepeatedScalarFieldContainer[ApprovalDecision]
    element: _projection_pb2.ShellElement
    expires_in_ms: int
    network_approval_context: NetworkApprovalContext
    def __init__(self, approval_id: _Optional[str] = ..., call_id: _Optional[str] = ..., kind: _Optional[_Union[ApprovalKind, str]] = ..., element_index: _Optional[int] = ..., argv: _Optional[_Iterable[str]] = ..., cwd: _Optional[str] = ..., environment_id: _Optional[str] = ..., reason: _Optional[str] = ..., proposed_amendment: _Optional[_Union[_projection_pb2.ExecPolicyAmendment, _Mapping]] = ..., approval_key_digest: _Optional[str] = ..., available_decisions: _Optional[_Iterable[_Union[ApprovalDecision, str]]] = ..., element: _Optional[_Union[_projection_pb2.ShellElement, _Mapping]] = ..., expires_in_ms: _Optional[int] = ..., network_approval_context: _Optional[_Union[NetworkApprovalContext, _Mapping]] = ...) -> None: ...

class NetworkApprovalContext(_message.Message):
    __slots__ = ("host", "protocol", "port")
    HOST_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    host: str
    protocol: str
    port: int
    def __init__(self, host: _Optional[str] = ..., protocol: _Optional[str] = ..., port: _Optional[int] = ...) -> None: ...

class ExecutionStarted(_message.Message):
    __slots__ = ("element_index", "environment_id", "process_id", "pid", "session_id", "sandboxed")
    ELEMENT_INDEX_FIELD_NUMBER: _ClassVar[int]
    ENVIRONMENT_ID_FIELD_NUMBER: _ClassVar[int]
    PROCESS_ID_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SANDBOXED_FIELD_NUMBER: _ClassVar[int]
    element_index: int
    environment_id: str
    process_id: str
    pid: int
    session_id: int
    sandboxed: bool
    def __init__(self, element_index: _Optional[int] = ..., environment_id: _Optional[str] = ..., process_id: _Optional[str] = ..., pid: _Optional[int] = ..., session_id: _Optional[int] = ..., sandboxed: _Optional[bool] = ...) -> None: ...

class ExecutionOutput(_message.Message):
    __slots__ = ("element_index", "stream", "seq", "data")
    ELEMENT_INDEX_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    element_index: int
    stream: _exec_pb2.OutputStream
    seq: int
    data: bytes
    def __init__(self, element_index: _Optional[int] = ..., stream: _Optional[_Union[_exec_pb2.OutputStream, str]] = ..., seq: _Optional[int] = ..., data: _Optional[bytes] = ...) -> None: ...

class TerminalInteraction(_message.Message):
    __slots__ = ("session_id", "stdin")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    STDIN_FIELD_NUMBER: _ClassVar[int]
    session_id: int
    stdin: str
    def __init__(self, session_id: _Optional[int] = ..., stdin: _Optional[str] = ...) -> None: ...

class ExecutionCompleted(_message.Message):
    __slots__ = ("output_item_json", "output_text", "success", "exit_code", "session_id", "wall_time_ms", "original_token_count", "truncated", "termination", "model_warnings", "reason")
    OUTPUT_ITEM_JSON_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TEXT_FIELD_NUMBER: _ClassVar[int]
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    WALL_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    ORIGINAL_TOKEN_COUNT_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    TERMINATION_FIELD_NUMBER: _ClassVar[int]
    MODEL_WARNINGS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    output_item_json: str
    output_text: str
    success: bool
    exit_code: int
    session_id: int
    wall_time_ms: int
    original_token_count: int
    truncated: bool
    termination: TerminationReason
    model_warnings: _containers.RepeatedScalarFieldContainer[str]
    reason: str
    def __init__(self, output_item_json: _Optional[str] = ..., output_text: _Optional[str] = ..., success: _Optional[bool] = ..., exit_code: _Optional[int] = ..., session_id: _Optional[int] = ..., wall_time_ms: _Optional[int] = ..., original_token_count: _Optional[int] = ..., truncated: _Optional[bool] = ..., termination: _Optional[_Union[TerminationReason, str]] = ..., model_warnings: _Optional[_Iterable[str]] = ..., reason: _Optional[str] = ...) -> None: ...

class ApprovalPending(_message.Message):
    __slots__ = ("approval_id", "details", "deadline_unix_ms", "caller_decides")
    APPROVAL_ID_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_UNIX_MS_FIELD_NUMBER: _ClassVar[int]
    CALLER_DECIDES_FIELD_NUMBER: _ClassVar[int]
    approval_id: str
    details: ApprovalRequired
    deadline_unix_ms: int
    caller_decides: bool
    def __init__(self, approval_id: _Optional[str] = ..., details: _Optional[_Union[ApprovalRequired, _Mapping]] = ..., deadline_unix_ms: _Optional[int] = ..., caller_decides: _Optional[bool] = ...) -> None: ...

class ApprovalWaiting(_message.Message):
    __slots__ = ("approval_id", "remaining_ms")
    APPROVAL_ID_FIELD_NUMBER: _ClassVar[int]
    REMAINING_MS_FIELD_NUMBER: _ClassVar[int]
    approval_id: str
    remaining_ms: int
    def __init__(self, approval_id: _Optional[str] = ..., remaining_ms: _Optional[int] = ...) -> None: ...

class ExecuteResponse(_message.Message):
    __slots__ = ("projection", "approval_required", "started", "output", "terminal_interaction", "completed", "approval_pending", "approval_waiting", "batch")
    PROJECTION_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_REQUIRED_FIELD_NUMBER: _ClassVar[int]
    STARTED_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    TERMINAL_INTERACTION_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_PENDING_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_WAITING_FIELD_NUMBER: _ClassVar[int]
    BATCH_FIELD_NUMBER: _ClassVar[int]
    projection: _projection_pb2.Projection
    approval_required: ApprovalRequired
    started: ExecutionStarted
    output: ExecutionOutput
    terminal_interaction: TerminalInteraction
    completed: ExecutionCompleted
    approval_pending: ApprovalPending
    approval_waiting: ApprovalWaiting
    batch: ExecuteBatch
    def __init__(self, projection: _Optional[_Union[_projection_pb2.Projection, _Mapping]] = ..., approval_required: _Optional[_Union[ApprovalRequired, _Mapping]] = ..., started: _Optional[_Union[ExecutionStarted, _Mapping]] = ..., output: _Optional[_Union[ExecutionOutput, _Mapping]] = ..., terminal_interaction: _Optional[_Union[TerminalInteraction, _Mapping]] = ..., completed: _Optional[_Union[ExecutionCompleted, _Mapping]] = ..., approval_pending: _Optional[_Union[ApprovalPending, _Mapping]] = ..., approval_waiting: _Optional[_Union[ApprovalWaiting, _Mapping]] = ..., batch: _Optional[_Union[ExecuteBatch, _Mapping]] = ...) -> None: ...

class ListEnvironmentsRequest(_message.Message):
    __slots__ = ("refresh",)
    REFRESH_FIELD_NUMBER: _ClassVar[int]
    refresh: bool
    def __init__(self, refresh: _Optional[bool] = ...) -> None: ...

class EnvironmentStatus(_message.Message):
    __slots__ = ("environment_id", "remote", "target", "reachable", "last_error", "info")
    ENVIRONMENT_ID_FIELD_NUMBER: _ClassVar[int]
    REMOTE_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    REACHABLE_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    INFO_FIELD_NUMBER: _ClassVar[int]
    environment_id: str
    remote: bool
    target: str
    reachable: bool
    last_error: str
    info: _exec_pb2.GetInfoResponse
    def __init__(self, environment_id: _Optional[str] = ..., remote: _Optional[bool] = ..., target: _Optional[str] = ..., reachable: _Optional[bool] = ..., last_error: _Optional[str] = ..., info: _Optional[_Union[_exec_pb2.GetInfoResponse, _Mapping]] = ...) -> None: ...

class ListEnvironmentsResponse(_message.Message):
    __slots__ = ("environments",)
    ENVIRONMENTS_FIELD_NUMBER: _ClassVar[int]
    environments: _containers.RepeatedCompositeFieldContainer[EnvironmentStatus]
    def __init__(self, environments: _Optional[_Iterable[_Union[EnvironmentStatus, _Mapping]]] = ...) -> None: ...

class ListSessionsRequest(_message.Message):
    __slots__ = ("thread_id",)
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    thread_id: str
    def __init__(self, thread_id: _Optional[str] = ...) -> None: ...

class SessionInfo(_message.Message):
    __slots__ = ("session_id", "environment_id", "call_id", "argv", "tty", "running", "exit_code", "started_at_ms", "last_used_at_ms")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    ENVIRONMENT_ID_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    ARGV_FIELD_NUMBER: _ClassVar[int]
    TTY_FIELD_NUMBER: _ClassVar[int]
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    LAST_USED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    session_id: int
    environment_id: str
    call_id: str
    argv: _containers.RepeatedScalarFieldContainer[str]
    tty: bool
    running: bool
    exit_code: int
    started_at_ms: int
    last_used_at_ms: int
    def __init__(self, session_id: _Optional[int] = ..., environment_id: _Optional[str] = ..., call_id: _Optional[str] = ..., argv: _Optional[_Iterable[str]] = ..., tty: _Optional[bool] = ..., running: _Optional[bool] = ..., exit_code: _Optional[int] = ..., started_at_ms: _Optional[int] = ..., last_used_at_ms: _Optional[int] = ...) -> None: ...

class ListSessionsResponse(_message.Message):
    __slots__ = ("sessions",)
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    sessions: _containers.RepeatedCompositeFieldContainer[SessionInfo]
    def __init__(self, sessions: _Optional[_Iterable[_Union[SessionInfo, _Mapping]]] = ...) -> None: ...

class TerminateSessionRequest(_message.Message):
    __slots__ = ("thread_id", "session_id")
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    thread_id: str
    session_id: int
    def __init__(self, thread_id: _Optional[str] = ..., session_id: _Optional[int] = ...) -> None: ...

class TerminateSessionResponse(_message.Message):
    __slots__ = ("was_running",)
    WAS_RUNNING_FIELD_NUMBER: _ClassVar[int]
    was_running: bool
    def __init__(self, was_running: _Optional[bool] = ...) -> None: ...

class InterruptRequest(_message.Message):
    __slots__ = ("thread_id", "call_id")
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    thread_id: str
    call_id: str
    def __init__(self, thread_id: _Optional[str] = ..., call_id: _Optional[str] = ...) -> None: ...

class InterruptResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class EndThreadRequest(_message.Message):
    __slots__ = ("thread_id",)
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    thread_id: str
    def __init__(self, thread_id: _Optional[str] = ...) -> None: ...

class EndThreadResponse(_message.Message):
    __slots__ = ("terminated_sessions", "dropped_pending_approvals")
    TERMINATED_SESSIONS_FIELD_NUMBER: _ClassVar[int]
    DROPPED_PENDING_APPROVALS_FIELD_NUMBER: _ClassVar[int]
    terminated_sessions: int
    dropped_pending_approvals: int
    def __init__(self, terminated_sessions: _Optional[int] = ..., dropped_pending_approvals: _Optional[int] = ...) -> None: ...

class GetServerInfoRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RulesError(_message.Message):
    __slots__ = ("message", "rendered", "at_ms")
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RENDERED_FIELD_NUMBER: _ClassVar[int]
    AT_MS_FIELD_NUMBER: _ClassVar[int]
    message: str
    rendered: str
    at_ms: int
    def __init__(self, message: _Optional[str] = ..., rendered: _Optional[str] = ..., at_ms: _Optional[int] = ...) -> None: ...

class GetServerInfoResponse(_message.Message):
    __slots__ = ("version", "instance_id", "environments", "rules_files", "last_rules_error")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    ENVIRONMENTS_FIELD_NUMBER: _ClassVar[int]
    RULES_FILES_FIELD_NUMBER: _ClassVar[int]
    LAST_RULES_ERROR_FIELD_NUMBER: _ClassVar[int]
    version: str
    instance_id: str
    environments: _containers.RepeatedCompositeFieldContainer[EnvironmentStatus]
    rules_files: _containers.RepeatedScalarFieldContainer[str]
    last_rules_error: RulesError
    def __init__(self, version: _Optional[str] = ..., instance_id: _Optional[str] = ..., environments: _Optional[_Iterable[_Union[EnvironmentStatus, _Mapping]]] = ..., rules_files: _Optional[_Iterable[str]] = ..., last_rules_error: _Optional[_Union[RulesError, _Mapping]] = ...) -> None: ...
