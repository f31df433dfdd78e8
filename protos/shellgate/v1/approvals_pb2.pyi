from shellgate.v1 import router_pb2 as _router_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ListPendingApprovalsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PendingApproval(_message.Message):
    __slots__ = ("approval_id", "thread_id", "call_id", "caller_subject", "tool", "environment_id", "cwd", "command", "summary", "kind", "reason", "segments", "matched_rules", "proposed_amendment", "available_decisions", "created_unix_ms", "deadline_unix_ms", "hidden_characters", "patch_files", "patch_diff", "env_overrides")
    APPROVAL_ID_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    CALLER_SUBJECT_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    ENVIRONMENT_ID_FIELD_NUMBER: _ClassVar[int]
    CWD_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    SEGMENTS_FIELD_NUMBER: _ClassVar[int]
    MATCHED_RULES_FIELD_NUMBER: _ClassVar[int]
    PROPOSED_AMENDMENT_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_DECISIONS_FIELD_NUMBER: _ClassVar[int]
    CREATED_UNIX_MS_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_UNIX_MS_FIELD_NUMBER: _ClassVar[int]
    HIDDEN_CHARACTERS_FIELD_NUMBER: _ClassVar[int]
    PATCH_FILES_FIELD_NUMBER: _ClassVar[int]
    PATCH_DIFF_FIELD_NUMBER: _ClassVar[int]
    ENV_OVERRIDES_FIELD_NUMBER: _ClassVar[int]
    approval_id: str
    thread_id: str
    call_id: str
    caller_subject: str
    tool: str
    environment_id: str
    cwd: str
    command: str
    summary: str
    kind: str
    reason: str
    segments: _containers.RepeatedScalarFieldContainer[str]
    matched_rules: _containers.RepeatedScalarFieldContainer[str]
    proposed_amendment: _containers.RepeatedScalarFieldContainer[str]
    available_decisions: _containers.RepeatedScalarFieldContainer[_router_pb2.ApprovalDecision]
    created_unix_ms: int
    deadline_unix_ms: int
    hidden_characters: _containers.RepeatedScalarFieldContainer[str]
    patch_files: _containers.RepeatedScalarFieldContainer[str]
    patch_diff: str
    env_overrides: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, approval_id: _Optional[str] = ..., thread_id: _Optional[str] = ..., call_id: _Optional[str] = ..., caller_subject: _Optional[str] = ..., tool: _Optional[str] = ..., environment_id: _Optional[str] = ..., cwd: _Optional[str] = ..., command: _Optional[str] = ..., summary: _Optional[str] = ..., kind: _Optional[str] = ..., reason: _Optional[str] = ..., segments: _Optional[_Iterable[str]] = ..., matched_rules: _Optional[_Iterable[str]] = ..., proposed_amendment: _Optional[_Iterable[str]] = ..., available_decisions: _Optional[_Iterable[_Union[_router_pb2.ApprovalDecision, str]]] = ..., created_unix_ms: _Optional[int] = ..., deadline_unix_ms: _Optional[int] = ..., hidden_characters: _Optional[_Iterable[str]] = ..., patch_files: _Optional[_Iterable[str]] = ..., patch_diff: _Optional[str] = ..., env_overrides: _Optional[_Iterable[str]] = ...) -> None: ...

class ListPendingApprovalsResponse(_message.Message):
    __slots__ = ("approvals",)
    APPROVALS_FIELD_NUMBER: _ClassVar[int]
    approvals: _containers.RepeatedCompositeFieldContainer[PendingApproval]
    def __init__(self, approvals: _Optional[_Iterable[_Union[PendingApproval, _Mapping]]] = ...) -> None: ...

class DecideApprovalRequest(_message.Message):
    __slots__ = ("approval_id", "decision")
    APPROVAL_ID_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    approval_id: str
    decision: _router_pb2.ApprovalDecision
    def __init__(self, approval_id: _Optional[str] = ..., decision: _Optional[_Union[_router_pb2.ApprovalDecision, str]] = ...) -> None: ...

class DecideApprovalResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class AnswerApprovalRequest(_message.Message):
    __slots__ = ("approval_id", "decision")
    APPROVAL_ID_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    approval_id: str
    decision: _router_pb2.ApprovalDecision
    def __init__(self, approval_id: _Optional[str] = ..., decision: _Optional[_Union[_router_pb2.ApprovalDecision, str]] = ...) -> None: ...

class AnswerApprovalResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
