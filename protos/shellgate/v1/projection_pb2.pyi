from shellgate.v1 import common_pb2 as _common_pb2
from shellgate.v1 import shell_pb2 as _shell_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PayloadKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PAYLOAD_KIND_UNSPECIFIED: _ClassVar[PayloadKind]
    PAYLOAD_KIND_FUNCTION: _ClassVar[PayloadKind]
    PAYLOAD_KIND_CUSTOM: _ClassVar[PayloadKind]
    PAYLOAD_KIND_TOOL_SEARCH: _ClassVar[PayloadKind]

class CommandOrigin(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    COMMAND_ORIGIN_UNSPECIFIED: _ClassVar[CommandOrigin]
    COMMAND_ORIGIN_GENERIC: _ClassVar[CommandOrigin]
    COMMAND_ORIGIN_POWERSHELL: _ClassVar[CommandOrigin]

class PolicyDecision(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    POLICY_DECISION_UNSPECIFIED: _ClassVar[PolicyDecision]
    POLICY_DECISION_ALLOW: _ClassVar[PolicyDecision]
    POLICY_DECISION_PROMPT: _ClassVar[PolicyDecision]
    POLICY_DECISION_FORBIDDEN: _ClassVar[PolicyDecision]

class ApprovalNamespace(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    APPROVAL_NAMESPACE_UNSPECIFIED: _ClassVar[ApprovalNamespace]
    APPROVAL_NAMESPACE_SHELL: _ClassVar[ApprovalNamespace]
    APPROVAL_NAMESPACE_UNIFIED_EXEC: _ClassVar[ApprovalNamespace]
    APPROVAL_NAMESPACE_APPLY_PATCH: _ClassVar[ApprovalNamespace]
PAYLOAD_KIND_UNSPECIFIED: PayloadKind
PAYLOAD_KIND_FUNCTION: PayloadKind
PAYLOAD_KIND_CUSTOM: PayloadKind
PAYLOAD_KIND_TOOL_SEARCH: PayloadKind
COMMAND_ORIGIN_UNSPECIFIED: CommandOrigin
COMMAND_ORIGIN_GENERIC: CommandOrigin
COMMAND_ORIGIN_POWERSHELL: CommandOrigin
POLICY_DECISION_UNSPECIFIED: PolicyDecision
POLICY_DECISION_ALLOW: PolicyDecision
POLICY_DECISION_PROMPT: PolicyDecision
POLICY_DECISION_FORBIDDEN: PolicyDecision
APPROVAL_NAMESPACE_UNSPECIFIED: ApprovalNamespace
APPROVAL_NAMESPACE_SHELL: ApprovalNamespace
APPROVAL_NAMESPACE_UNIFIED_EXEC: ApprovalNamespace
APPROVAL_NAMESPACE_APPLY_PATCH: ApprovalNamespace

class NoToolCall(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...

class ToolError(_message.Message):
    __slots__ = ("text",)
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class ByteSpan(_message.Message):
    __slots__ = ("start", "end")
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    start: int
    end: int
    def __init__(self, start: _Optional[int] = ..., end: _Optional[int] = ...) -> None: ...

class CommandWords(_message.Message):
    __slots__ = ("words", "span")
    WORDS_FIELD_NUMBER: _ClassVar[int]
    SPAN_FIELD_NUMBER: _ClassVar[int]
    words: _containers.RepeatedScalarFieldContainer[str]
    span: ByteSpan
    def __init__(self, words: _Optional[_Iterable[str]] = ..., span: _Optional[_Union[ByteSpan, _Mapping]] = ...) -> None: ...

class PrefixRuleMatch(_message.Message):
    __slots__ = ("matched_prefix", "decision", "resolved_program", "justification", "source")
    MATCHED_PREFIX_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    RESOLVED_PROGRAM_FIELD_NUMBER: _ClassVar[int]
    JUSTIFICATION_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    matched_prefix: _containers.RepeatedScalarFieldContainer[str]
    decision: PolicyDecision
    resolved_program: str
    justification: str
    source: str
    def __init__(self, matched_prefix: _Optional[_Iterable[str]] = ..., decision: _Optional[_Union[PolicyDecision, str]] = ..., resolved_program: _Optional[str] = ..., justification: _Optional[str] = ..., source: _Optional[str] = ...) -> None: ...

class HeuristicsRuleMatch(_message.Message):
    __slots__ = ("command", "decision")
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    command: _containers.RepeatedScalarFieldContainer[str]
    decision: PolicyDecision
    def __init__(self, command: _Optional[_Iterable[str]] = ..., decision: _Optional[_Union[PolicyDecision, str]] = ...) -> None: ...

class RuleMatch(_message.Message):
    __slots__ = ("prefix_rule_match", "heuristics_rule_match")
    PREFIX_RULE_MATCH_FIELD_NUMBER: _ClassVar[int]
    HEURISTICS_RULE_MATCH_FIELD_NUMBER: _ClassVar[int]
    prefix_rule_match: PrefixRuleMatch
    heuristics_rule_match: HeuristicsRuleMatch
    def __init__(self, prefix_rule_match: _Optional[_Union[PrefixRuleMatch, _Mapping]] = ..., heuristics_rule_match: _Optional[_Union[HeuristicsRuleMatch, _Mapping]] = ...) -> None: ...

class PolicyProjection(_message.Message):
    __slots__ = ("commands", "used_complex_parsing", "command_origin", "literal_commands", "prefix_rule", "segment_matches", "scan_matches")
    COMMANDS_FIELD_NUMBER: _ClassVar[int]
    USED_COMPLEX_PARSING_FIELD_NUMBER: _ClassVar[int]
    COMMAND_ORIGIN_FIELD_NUMBER: _ClassVar[int]
    LITERAL_COMMANDS_FIELD_NUMBER: _ClassVar[int]
    PREFIX_RULE_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_MATCHES_FIELD_NUMBER: _ClassVar[int]
    SCAN_MATCHES_FIELD_NUMBER: _ClassVar[int]
    commands: _containers.RepeatedCompositeFieldContainer[CommandWords]
    used_complex_parsing: bool
    command_origin: CommandOrigin
    literal_commands: LiteralCommandScan
    prefix_rule: _containers.RepeatedScalarFieldContainer[str]
    segment_matches: _containers.RepeatedCompositeFieldContainer[RuleMatch]
    scan_matches: _containers.RepeatedCompositeFieldContainer[RuleMatch]
    def __init__(self, commands: _Optional[_Iterable[_Union[CommandWords, _Mapping]]] = ..., used_complex_parsing: _Optional[bool] = ..., command_origin: _Optional[_Union[CommandOrigin, str]] = ..., literal_commands: _Optional[_Union[LiteralCommandScan, _Mapping]] = ..., prefix_rule: _Optional[_Iterable[str]] = ..., segment_matches: _Optional[_Iterable[_Union[RuleMatch, _Mapping]]] = ..., scan_matches: _Optional[_Iterable[_Union[RuleMatch, _Mapping]]] = ...) -> None: ...

class LiteralCommandScan(_message.Message):
    __slots__ = ("commands",)
    COMMANDS_FIELD_NUMBER: _ClassVar[int]
    commands: _containers.RepeatedCompositeFieldContainer[CommandWords]
    def __init__(self, commands: _Optional[_Iterable[_Union[CommandWords, _Mapping]]] = ...) -> None: ...

class CommandPermissions(_message.Message):
    __slots__ = ("sandbox_permissions", "additional_permissions")
    SANDBOX_PERMISSIONS_FIELD_NUMBER: _ClassVar[int]
    ADDITIONAL_PERMISSIONS_FIELD_NUMBER: _ClassVar[int]
    sandbox_permissions: _common_pb2.SandboxPermissions
    additional_permissions: _common_pb2.AdditionalPermissions
    def __init__(self, sandbox_permissions: _Optional[_Union[_common_pb2.SandboxPermissions, str]] = ..., additional_permissions: _Optional[_Union[_common_pb2.AdditionalPermissions, _Mapping]] = ...) -> None: ...

class ApprovalIdentity(_message.Message):
    __slots__ = ("namespace", "canonical_command", "environment_id", "cwd", "permissions", "tty", "patch", "canonical_json", "digest")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    CANONICAL_COMMAND_FIELD_NUMBER: _ClassVar[int]
    ENVIRONMENT_ID_FIELD_NUMBER: _ClassVar[int]
    CWD_FIELD_NUMBER: _ClassVar[int]
    PERMISSIONS_FIELD_NUMBER: _ClassVar[int]
    TTY_FIELD_NUMBER: _ClassVar[int]
    PATCH_FIELD_NUMBER: _ClassVar[int]
    CANONICAL_JSON_FIELD_NUMBER: _ClassVar[int]
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    namespace: ApprovalNamespace
    canonical_command: _containers.RepeatedScalarFieldContainer[str]
    environment_id: str
    cwd: str
    permissions: CommandPermissions
    tty: bool
    patch: str
    canonical_json: str
    digest: str
    def __init__(self, namespace: _Optional[_Union[ApprovalNamespace, str]] = ..., canonical_command: _Optional[_Iterable[str]] = ..., environment_id: _Optional[str] = ..., cwd: _Optional[str] = ..., permissions: _Optional[_Union[CommandPermissions, _Mapping]] = ..., tty: _Optional[bool] = ..., patch: _Optional[str] = ..., canonical_json: _Optional[str] = ..., digest: _Optional[str] = ...) -> None: ...

class ParsedRead(_message.Message):
    __slots__ = ("cmd", "name", "path")
    CMD_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    cmd: str
    name: str
    path: str
    def __init__(self, cmd: _Optional[str] = ..., name: _Optional[str] = ..., path: _Optional[str] = ...) -> None: ...

class ParsedListFiles(_message.Message):
    __slots__ = ("cmd", "path")
    CMD_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    cmd: str
    path: str
    def __init__(self, cmd: _Optional[str] = ..., path: _Optional[str] = ...) -> None: ...

class ParsedSearch(_message.Message):
    __slots__ = ("cmd", "query", "path")
    CMD_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    cmd: str
    query: str
    path: str
    def __init__(self, cmd: _Optional[str] = ..., query: _Optional[str] = ..., path: _Optional[str] = ...) -> None: ...

class ParsedUnknown(_message.Message):
    __slots__ = ("cmd",)
    CMD_FIELD_NUMBER: _ClassVar[int]
    cmd: str
    def __init__(self, cmd: _Optional[str] = ...) -> None: ...

class ParsedCommand(_message.Message):
    __slots__ = ("read", "list_files", "search", "unknown")
    READ_FIELD_NUMBER: _ClassVar[int]
    LIST_FILES_FIELD_NUMBER: _ClassVar[int]
    SEARCH_FIELD_NUMBER: _ClassVar[int]
    UNKNOWN_FIELD_NUMBER: _ClassVar[int]
    read: ParsedRead
    list_files: ParsedListFiles
    search: ParsedSearch
    unknown: ParsedUnknown
    def __init__(self, read: _Optional[_Union[ParsedRead, _Mapping]] = ..., list_files: _Optional[_Union[ParsedListFiles, _Mapping]] = ..., search: _Optional[_Union[ParsedSearch, _Mapping]] = ..., unknown: _Optional[_Union[ParsedUnknown, _Mapping]] = ...) -> None: ...

class ExecPolicyAmendment(_message.Message):
    __slots__ = ("prefix",)
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    prefix: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, prefix: _Optional[_Iterable[str]] = ...) -> None: ...

class RequirementSkip(_message.Message):
    __slots__ = ("bypass_sandbox", "proposed_amendment")
    BYPASS_SANDBOX_FIELD_NUMBER: _ClassVar[int]
    PROPOSED_AMENDMENT_FIELD_NUMBER: _ClassVar[int]
    bypass_sandbox: bool
    proposed_amendment: ExecPolicyAmendment
    def __init__(self, bypass_sandbox: _Optional[bool] = ..., proposed_amendment: _Optional[_Union[ExecPolicyAmendment, _Mapping]] = ...) -> None: ...

class RequirementNeedsApproval(_message.Message):
    __slots__ = ("reason", "proposed_amendment")
    REASON_FIELD_NUMBER: _ClassVar[int]
    PROPOSED_AMENDMENT_FIELD_NUMBER: _ClassVar[int]
    reason: str
    proposed_amendment: ExecPolicyAmendment
    def __init__(self, reason: _Optional[str] = ..., proposed_amendment: _Optional[_Union[ExecPolicyAmendment, _Mapping]] = ...) -> None: ...

class RequirementForbidden(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...

class ApprovalRequirement(_message.Message):
    __slots__ = ("skip", "needs_approval", "forbidden")
    SKIP_FIELD_NUMBER: _ClassVar[int]
    NEEDS_APPROVAL_FIELD_NUMBER: _ClassVar[int]
    FORBIDDEN_FIELD_NUMBER: _ClassVar[int]
    skip: RequirementSkip
    needs_approval: RequirementNeedsApproval
    forbidden: RequirementForbidden
    def __init__(self, skip: _Optional[_Union[RequirementSkip, _Mapping]] = ..., needs_approval: _Optional[_Union[RequirementNeedsApproval, _Mapping]] = ..., forbidden: _Optional[_Union[RequirementForbidden, _Mapping]] = ...) -> None: ...

class ExecutionEnvelope(_message.Message):
    __slots__ = ("argv", "cwd", "sandbox_cwd", "env", "shell_mode", "timeout_ms", "default_timeout", "tty", "yield_time_ms", "output_budget", "process_id", "requested_permissions", "effective_permissions", "preapproved", "justification")
    class EnvEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ARGV_FIELD_NUMBER: _ClassVar[int]
    CWD_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_CWD_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    SHELL_MODE_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    TTY_FIELD_NUMBER: _ClassVar[int]
    YIELD_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_BUDGET_FIELD_NUMBER: _ClassVar[int]
    PROCESS_ID_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_PERMISSIONS_FIELD_NUMBER: _ClassVar[int]
    EFFECTIVE_PERMISSIONS_FIELD_NUMBER: _ClassVar[int]
    PREAPPROVED_FIELD_NUMBER: _ClassVar[int]
    JUSTIFICATION_FIELD_NUMBER: _ClassVar[int]
    argv: _containers.RepeatedScalarFieldContainer[str]
    cwd: str
    sandbox_cwd: str
    env: _containers.ScalarMap[str, str]
    shell_mode: _shell_pb2.ShellMode
    timeout_ms: int
    default_timeout: bool
    tty: bool
    yield_time_ms: int
    output_budget: _common_pb2.TruncationPolicy
    process_id: int
    requested_permissions: CommandPermissions
    effective_permissions: CommandPermissions
    preapproved: bool
    justification: str
    def __init__(self, argv: _Optional[_Iterable[str]] = ..., cwd: _Optional[str] = ..., sandbox_cwd: _Optional[str] = ..., env: _Optional[_Mapping[str, str]] = ..., shell_mode: _Optional[_Union[_shell_pb2.ShellMode, str]] = ..., timeout_ms: _Optional[int] = ..., default_timeout: _Optional[bool] = ..., tty: _Optional[bool] = ..., yield_time_ms: _Optional[int] = ..., output_budget: _Optional[_Union[_common_pb2.TruncationPolicy, _Mapping]] = ..., process_id: _Optional[int] = ..., requested_permissions: _Optional[_Union[CommandPermissions, _Mapping]] = ..., effective_permissions: _Optional[_Union[CommandPermissions, _Mapping]] = ..., preapproved: _Optional[bool] = ..., justification: _Optional[str] = ...) -> None: ...

class HandlerCommandProjection(_message.Message):
    __slots__ = ("handler_argv", "shell", "login", "environment_id", "remote", "cwd", "sandbox_cwd", "envelope", "policy", "approval", "display", "requirement")
    HANDLER_ARGV_FIELD_NUMBER: _ClassVar[int]
    SHELL_FIELD_NUMBER: _ClassVar[int]
    LOGIN_FIELD_NUMBER: _ClassVar[int]
    ENVIRONMENT_ID_FIELD_NUMBER: _ClassVar[int]
    REMOTE_FIELD_NUMBER: _ClassVar[int]
    CWD_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_CWD_FIELD_NUMBER: _ClassVar[int]
    ENVELOPE_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_FIELD_NUMBER: _ClassVar[int]
    REQUIREMENT_FIELD_NUMBER: _ClassVar[int]
    handler_argv: _containers.RepeatedScalarFieldContainer[str]
    shell: _shell_pb2.ShellInfo
    login: bool
    environment_id: str
    remote: bool
    cwd: str
    sandbox_cwd: str
    envelope: ExecutionEnvelope
    policy: PolicyProjection
    approval: ApprovalIdentity
    display: _containers.RepeatedCompositeFieldContainer[ParsedCommand]
    requirement: ApprovalRequirement
    def __init__(self, handler_argv: _Optional[_Iterable[str]] = ..., shell: _Optional[_Union[_shell_pb2.ShellInfo, _Mapping]] = ..., login: _Optional[bool] = ..., environment_id: _Optional[str] = ..., remote: _Optional[bool] = ..., cwd: _Optional[str] = ..., sandbox_cwd: _Optional[str] = ..., envelope: _Optional[_Union[ExecutionEnvelope, _Mapping]] = ..., policy: _Optional[_Union[PolicyProjection, _Mapping]] = ..., approval: _Optional[_Union[ApprovalIdentity, _Mapping]] = ..., display: _Optional[_Iterable[_Union[ParsedCommand, _Mapping]]] = ..., requirement: _Optional[_Union[ApprovalRequirement, _Mapping]] = ...) -> None: ...

class AddFileHunk(_message.Message):
    __slots__ = ("path", "contents")
    PATH_FIELD_NUMBER: _ClassVar[int]
    CONTENTS_FIELD_NUMBER: _ClassVar[int]
    path: str
    contents: str
    def __init__(self, path: _Optional[str] = ..., contents: _Optional[str] = ...) -> None: ...

class DeleteFileHunk(_message.Message):
    __slots__ = ("path",)
    PATH_FIELD_NUMBER: _ClassVar[int]
    path: str
    def __init__(self, path: _Optional[str] = ...) -> None: ...

class UpdateFileChunk(_message.Message):
    __slots__ = ("change_context", "old_lines", "new_lines", "is_end_of_file")
    CHANGE_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    OLD_LINES_FIELD_NUMBER: _ClassVar[int]
    NEW_LINES_FIELD_NUMBER: _ClassVar[int]
    IS_END_OF_FILE_FIELD_NUMBER: _ClassVar[int]
    change_context: str
    old_lines: _containers.RepeatedScalarFieldContainer[str]
    new_lines: _containers.RepeatedScalarFieldContainer[str]
    is_end_of_file: bool
    def __init__(self, change_context: _Optional[str] = ..., old_lines: _Optional[_Iterable[str]] = ..., new_lines: _Optional[_Iterable[str]] = ..., is_end_of_file: _Optional[bool] = ...) -> None: ...

class UpdateFileHunk(_message.Message):
    __slots__ = ("path", "move_path", "chunks")
    PATH_FIELD_NUMBER: _ClassVar[int]
    MOVE_PATH_FIELD_NUMBER: _ClassVar[int]
    CHUNKS_FIELD_NUMBER: _ClassVar[int]
    path: str
    move_path: str
    chunks: _containers.RepeatedCompositeFieldContainer[UpdateFileChunk]
    def __init__(self, path: _Optional[str] = ..., move_path: _Optional[str] = ..., chunks: _Optional[_Iterable[_Union[UpdateFileChunk, _Mapping]]] = ...) -> None: ...

class PatchHunk(_message.Message):
    __slots__ = ("add_file", "delete_file", "update_file")
    ADD_FILE_FIELD_NUMBER: _ClassVar[int]
    DELETE_FILE_FIELD_NUMBER: _ClassVar[int]
    UPDATE_FILE_FIELD_NUMBER: _ClassVar[int]
    add_file: AddFileHunk
    delete_file: DeleteFileHunk
    update_file: UpdateFileHunk
    def __init__(self, add_file: _Optional[_Union[AddFileHunk, _Mapping]] = ..., delete_file: _Optional[_Union[DeleteFileHunk, _Mapping]] = ..., update_file: _Optional[_Union[UpdateFileHunk, _Mapping]] = ...) -> None: ...

class PatchBody(_message.Message):
    __slots__ = ("workdir", "hunks", "environment_id", "approval", "requirement")
    WORKDIR_FIELD_NUMBER: _ClassVar[int]
    HUNKS_FIELD_NUMBER: _ClassVar[int]
    ENVIRONMENT_ID_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_FIELD_NUMBER: _ClassVar[int]
    REQUIREMENT_FIELD_NUMBER: _ClassVar[int]
    workdir: str
    hunks: _containers.RepeatedCompositeFieldContainer[PatchHunk]
    environment_id: str
    approval: ApprovalIdentity
    requirement: ApprovalRequirement
    def __init__(self, workdir: _Optional[str] = ..., hunks: _Optional[_Iterable[_Union[PatchHunk, _Mapping]]] = ..., environment_id: _Optional[str] = ..., approval: _Optional[_Union[ApprovalIdentity, _Mapping]] = ..., requirement: _Optional[_Union[ApprovalRequirement, _Mapping]] = ...) -> None: ...

class ApplyPatchProjection(_message.Message):
    __slots__ = ("body", "correctness_error")
    BODY_FIELD_NUMBER: _ClassVar[int]
    CORRECTNESS_ERROR_FIELD_NUMBER: _ClassVar[int]
    body: PatchBody
    correctness_error: str
    def __init__(self, body: _Optional[_Union[PatchBody, _Mapping]] = ..., correctness_error: _Optional[str] = ...) -> None: ...

class ShellElement(_message.Message):
    __slots__ = ("command", "apply_patch")
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    APPLY_PATCH_FIELD_NUMBER: _ClassVar[int]
    command: HandlerCommandProjection
    apply_patch: ApplyPatchProjection
    def __init__(self, command: _Optional[_Union[HandlerCommandProjection, _Mapping]] = ..., apply_patch: _Optional[_Union[ApplyPatchProjection, _Mapping]] = ...) -> None: ...

class ShellOutcome(_message.Message):
    __slots__ = ("elements", "batch")
    ELEMENTS_FIELD_NUMBER: _ClassVar[int]
    BATCH_FIELD_NUMBER: _ClassVar[int]
    elements: _containers.RepeatedCompositeFieldContainer[ShellElement]
    batch: bool
    def __init__(self, elements: _Optional[_Iterable[_Union[ShellElement, _Mapping]]] = ..., batch: _Optional[bool] = ...) -> None: ...

class WriteStdinProjection(_message.Message):
    __slots__ = ("session_id", "chars", "yield_time_ms", "output_budget")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    CHARS_FIELD_NUMBER: _ClassVar[int]
    YIELD_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_BUDGET_FIELD_NUMBER: _ClassVar[int]
    session_id: int
    chars: str
    yield_time_ms: int
    output_budget: _common_pb2.TruncationPolicy
    def __init__(self, session_id: _Optional[int] = ..., chars: _Optional[str] = ..., yield_time_ms: _Optional[int] = ..., output_budget: _Optional[_Union[_common_pb2.TruncationPolicy, _Mapping]] = ...) -> None: ...

class Projection(_message.Message):
    __slots__ = ("call_id", "tool_name", "tool_namespace", "payload_kind", "no_tool_call", "tool_error", "shell", "apply_patch", "write_stdin", "warnings")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_NAME_FIELD_NUMBER: _ClassVar[int]
    TOOL_NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_KIND_FIELD_NUMBER: _ClassVar[int]
    NO_TOOL_CALL_FIELD_NUMBER: _ClassVar[int]
    TOOL_ERROR_FIELD_NUMBER: _ClassVar[int]
    SHELL_FIELD_NUMBER: _ClassVar[int]
    APPLY_PATCH_FIELD_NUMBER: _ClassVar[int]
    WRITE_STDIN_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    tool_name: str
    tool_namespace: str
    payload_kind: PayloadKind
    no_tool_call: NoToolCall
    tool_error: ToolError
    shell: ShellOutcome
    apply_patch: ApplyPatchProjection
    write_stdin: WriteStdinProjection
    warnings: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, call_id: _Optional[str] = ..., tool_name: _Optional[str] = ..., tool_namespace: _Optional[str] = ..., payload_kind: _Optional[_Union[PayloadKind, str]] = ..., no_tool_call: _Optional[_Union[NoToolCall, _Mapping]] = ..., tool_error: _Optional[_Union[ToolError, _Mapping]] = ..., shell: _Optional[_Union[ShellOutcome, _Mapping]] = ..., apply_patch: _Optional[_Union[ApplyPatchProjection, _Mapping]] = ..., write_stdin: _Optional[_Union[WriteStdinProjection, _Mapping]] = ..., warnings: _Optional[_Iterable[str]] = ...) -> None: ...
