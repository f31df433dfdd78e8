from shellgate.v1 import shell_pb2 as _shell_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ToolCallKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TOOL_CALL_KIND_UNSPECIFIED: _ClassVar[ToolCallKind]
    TOOL_CALL_KIND_FUNCTION_CALL: _ClassVar[ToolCallKind]
    TOOL_CALL_KIND_CUSTOM_TOOL_CALL: _ClassVar[ToolCallKind]

class ApprovalPolicyKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    APPROVAL_POLICY_KIND_UNSPECIFIED: _ClassVar[ApprovalPolicyKind]
    APPROVAL_POLICY_KIND_NEVER: _ClassVar[ApprovalPolicyKind]
    APPROVAL_POLICY_KIND_ON_FAILURE: _ClassVar[ApprovalPolicyKind]
    APPROVAL_POLICY_KIND_ON_REQUEST: _ClassVar[ApprovalPolicyKind]
    APPROVAL_POLICY_KIND_UNTRUSTED: _ClassVar[ApprovalPolicyKind]
    APPROVAL_POLICY_KIND_GRANULAR: _ClassVar[ApprovalPolicyKind]

class PermissionProfileKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PERMISSION_PROFILE_KIND_UNSPECIFIED: _ClassVar[PermissionProfileKind]
    PERMISSION_PROFILE_KIND_READ_ONLY: _ClassVar[PermissionProfileKind]
    PERMISSION_PROFILE_KIND_WORKSPACE_WRITE: _ClassVar[PermissionProfileKind]
    PERMISSION_PROFILE_KIND_DANGER_FULL_ACCESS: _ClassVar[PermissionProfileKind]
    PERMISSION_PROFILE_KIND_EXTERNAL_SANDBOX: _ClassVar[PermissionProfileKind]

class SandboxPermissions(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SANDBOX_PERMISSIONS_UNSPECIFIED: _ClassVar[SandboxPermissions]
    SANDBOX_PERMISSIONS_USE_DEFAULT: _ClassVar[SandboxPermissions]
    SANDBOX_PERMISSIONS_REQUIRE_ESCALATED: _ClassVar[SandboxPermissions]
    SANDBOX_PERMISSIONS_WITH_ADDITIONAL_PERMISSIONS: _ClassVar[SandboxPermissions]

class FileSystemAccess(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FILE_SYSTEM_ACCESS_UNSPECIFIED: _ClassVar[FileSystemAccess]
    FILE_SYSTEM_ACCESS_READ: _ClassVar[FileSystemAccess]
    FILE_SYSTEM_ACCESS_WRITE: _ClassVar[FileSystemAccess]
    FILE_SYSTEM_ACCESS_NONE: _ClassVar[FileSystemAccess]

class GrantScope(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    GRANT_SCOPE_UNSPECIFIED: _ClassVar[GrantScope]
    GRANT_SCOPE_TURN: _ClassVar[GrantScope]
    GRANT_SCOPE_SESSION: _ClassVar[GrantScope]

class ModelShellToolType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MODEL_SHELL_TOOL_TYPE_UNSPECIFIED: _ClassVar[ModelShellToolType]
    MODEL_SHELL_TOOL_TYPE_DEFAULT: _ClassVar[ModelShellToolType]
    MODEL_SHELL_TOOL_TYPE_LOCAL: _ClassVar[ModelShellToolType]
    MODEL_SHELL_TOOL_TYPE_UNIFIED_EXEC: _ClassVar[ModelShellToolType]
    MODEL_SHELL_TOOL_TYPE_DISABLED: _ClassVar[ModelShellToolType]
    MODEL_SHELL_TOOL_TYPE_SHELL_COMMAND: _ClassVar[ModelShellToolType]

class ApplyPatchToolType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    APPLY_PATCH_TOOL_TYPE_UNSPECIFIED: _ClassVar[ApplyPatchToolType]
    APPLY_PATCH_TOOL_TYPE_FREEFORM: _ClassVar[ApplyPatchToolType]
    APPLY_PATCH_TOOL_TYPE_DISABLED: _ClassVar[ApplyPatchToolType]

class ApprovalRoute(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    APPROVAL_ROUTE_UNSPECIFIED: _ClassVar[ApprovalRoute]
    APPROVAL_ROUTE_CALLER: _ClassVar[ApprovalRoute]
    APPROVAL_ROUTE_OPERATOR: _ClassVar[ApprovalRoute]
TOOL_CALL_KIND_UNSPECIFIED: ToolCallKind
TOOL_CALL_KIND_FUNCTION_CALL: ToolCallKind
TOOL_CALL_KIND_CUSTOM_TOOL_CALL: ToolCallKind
APPROVAL_POLICY_KIND_UNSPECIFIED: ApprovalPolicyKind
APPROVAL_POLICY_KIND_NEVER: ApprovalPolicyKind
APPROVAL_POLICY_KIND_ON_FAILURE: ApprovalPolicyKind
APPROVAL_POLICY_KIND_ON_REQUEST: ApprovalPolicyKind
APPROVAL_POLICY_KIND_UNTRUSTED: ApprovalPolicyKind
APPROVAL_POLICY_KIND_GRANULAR: ApprovalPolicyKind
PERMISSION_PROFILE_KIND_UNSPECIFIED: PermissionProfileKind
PERMISSION_PROFILE_KIND_READ_ONLY: PermissionProfileKind
PERMISSION_PROFILE_KIND_WORKSPACE_WRITE: PermissionProfileKind
PERMISSION_PROFILE_KIND_DANGER_FULL_ACCESS: PermissionProfileKind
PERMISSION_PROFILE_KIND_EXTERNAL_SANDBOX: PermissionProfileKind
SANDBOX_PERMISSIONS_UNSPECIFIED: SandboxPermissions
SANDBOX_PERMISSIONS_USE_DEFAULT: SandboxPermissions
SANDBOX_PERMISSIONS_REQUIRE_ESCALATED: SandboxPermissions
SANDBOX_PERMISSIONS_WITH_ADDITIONAL_PERMISSIONS: SandboxPermissions
FILE_SYSTEM_ACCESS_UNSPECIFIED: FileSystemAccess
FILE_SYSTEM_ACCESS_READ: FileSystemAccess
FILE_SYSTEM_ACCESS_WRITE: FileSystemAccess
FILE_SYSTEM_ACCESS_NONE: FileSystemAccess
GRANT_SCOPE_UNSPECIFIED: GrantScope
GRANT_SCOPE_TURN: GrantScope
GRANT_SCOPE_SESSION: GrantScope
MODEL_SHELL_TOOL_TYPE_UNSPECIFIED: ModelShellToolType
MODEL_SHELL_TOOL_TYPE_DEFAULT: ModelShellToolType
MODEL_SHELL_TOOL_TYPE_LOCAL: ModelShellToolType
MODEL_SHELL_TOOL_TYPE_UNIFIED_EXEC: ModelShellToolType
MODEL_SHELL_TOOL_TYPE_DISABLED: ModelShellToolType
MODEL_SHELL_TOOL_TYPE_SHELL_COMMAND: ModelShellToolType
APPLY_PATCH_TOOL_TYPE_UNSPECIFIED: ApplyPatchToolType
APPLY_PATCH_TOOL_TYPE_FREEFORM: ApplyPatchToolType
APPLY_PATCH_TOOL_TYPE_DISABLED: ApplyPatchToolType
APPROVAL_ROUTE_UNSPECIFIED: ApprovalRoute
APPROVAL_ROUTE_CALLER: ApprovalRoute
APPROVAL_ROUTE_OPERATOR: ApprovalRoute

class SplitToolCall(_message.Message):
    __slots__ = ("kind", "name", "namespace", "call_id", "arguments")
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    kind: ToolCallKind
    name: str
    namespace: str
    call_id: str
    arguments: str
    def __init__(self, kind: _Optional[_Union[ToolCallKind, str]] = ..., name: _Optional[str] = ..., namespace: _Optional[str] = ..., call_id: _Optional[str] = ..., arguments: _Optional[str] = ...) -> None: ...

class ToolCallItem(_message.Message):
    __slots__ = ("raw_json", "split")
    RAW_JSON_FIELD_NUMBER: _ClassVar[int]
    SPLIT_FIELD_NUMBER: _ClassVar[int]
    raw_json: str
    split: SplitToolCall
    def __init__(self, raw_json: _Optional[str] = ..., split: _Optional[_Union[SplitToolCall, _Mapping]] = ...) -> None: ...

class TurnEnvironment(_message.Message):
    __slots__ = ("environment_id", "cwd")
    ENVIRONMENT_ID_FIELD_NUMBER: _ClassVar[int]
    CWD_FIELD_NUMBER: _ClassVar[int]
    environment_id: str
    cwd: str
    def __init__(self, environment_id: _Optional[str] = ..., cwd: _Optional[str] = ...) -> None: ...

class GranularApprovalPolicy(_message.Message):
    __slots__ = ("sandbox_approval", "rules", "skill_approval", "request_permissions", "mcp_elicitations")
    SANDBOX_APPROVAL_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    SKILL_APPROVAL_FIELD_NUMBER: _ClassVar[int]
    REQUEST_PERMISSIONS_FIELD_NUMBER: _ClassVar[int]
    MCP_ELICITATIONS_FIELD_NUMBER: _ClassVar[int]
    sandbox_approval: bool
    rules: bool
    skill_approval: bool
    request_permissions: bool
    mcp_elicitations: bool
    def __init__(self, sandbox_approval: _Optional[bool] = ..., rules: _Optional[bool] = ..., skill_approval: _Optional[bool] = ..., request_permissions: _Optional[bool] = ..., mcp_elicitations: _Optional[bool] = ...) -> None: ...

class ApprovalPolicy(_message.Message):
    __slots__ = ("kind", "granular")
    KIND_FIELD_NUMBER: _ClassVar[int]
    GRANULAR_FIELD_NUMBER: _ClassVar[int]
    kind: ApprovalPolicyKind
    granular: GranularApprovalPolicy
    def __init__(self, kind: _Optional[_Union[ApprovalPolicyKind, str]] = ..., granular: _Optional[_Union[GranularApprovalPolicy, _Mapping]] = ...) -> None: ...

class PermissionProfile(_message.Message):
    __slots__ = ("kind", "writable_roots", "network_access", "active_profile_id", "egress")
    KIND_FIELD_NUMBER: _ClassVar[int]
    WRITABLE_ROOTS_FIELD_NUMBER: _ClassVar[int]
    NETWORK_ACCESS_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_PROFILE_ID_FIELD_NUMBER: _ClassVar[int]
    EGRESS_FIELD_NUMBER: _ClassVar[int]
    kind: PermissionProfileKind
    writable_roots: _containers.RepeatedScalarFieldContainer[str]
    network_access: bool
    active_profile_id: str
    egress: _shell_pb2.EgressNarrowing
    def __init__(self, kind: _Optional[_Union[PermissionProfileKind, str]] = ..., writable_roots: _Optional[_Iterable[str]] = ..., network_access: _Optional[bool] = ..., active_profile_id: _Optional[str] = ..., egress: _Optional[_Union[_shell_pb2.EgressNarrowing, _Mapping]] = ...) -> None: ...

class NetworkPermissions(_message.Message):
    __slots__ = ("enabled",)
    ENABLED_FIELD_NUMBER: _ClassVar[int]
    enabled: bool
    def __init__(self, enabled: _Optional[bool] = ...) -> None: ...

class FileSystemEntry(_message.Message):
    __slots__ = ("path", "access")
    PATH_FIELD_NUMBER: _ClassVar[int]
    ACCESS_FIELD_NUMBER: _ClassVar[int]
    path: str
    access: FileSystemAccess
    def __init__(self, path: _Optional[str] = ..., access: _Optional[_Union[FileSystemAccess, str]] = ...) -> None: ...

class FileSystemPermissions(_message.Message):
    __slots__ = ("entries", "glob_scan_max_depth")
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    GLOB_SCAN_MAX_DEPTH_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[FileSystemEntry]
    glob_scan_max_depth: int
    def __init__(self, entries: _Optional[_Iterable[_Union[FileSystemEntry, _Mapping]]] = ..., glob_scan_max_depth: _Optional[int] = ...) -> None: ...

class AdditionalPermissions(_message.Message):
    __slots__ = ("network", "file_system")
    NETWORK_FIELD_NUMBER: _ClassVar[int]
    FILE_SYSTEM_FIELD_NUMBER: _ClassVar[int]
    network: NetworkPermissions
    file_system: FileSystemPermissions
    def __init__(self, network: _Optional[_Union[NetworkPermissions, _Mapping]] = ..., file_system: _Optional[_Union[FileSystemPermissions, _Mapping]] = ...) -> None: ...

class PermissionGrant(_message.Message):
    __slots__ = ("environment_id", "scope", "permissions")
    ENVIRONMENT_ID_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    PERMISSIONS_FIELD_NUMBER: _ClassVar[int]
    environment_id: str
    scope: GrantScope
    permissions: AdditionalPermissions
    def __init__(self, environment_id: _Optional[str] = ..., scope: _Optional[_Union[GrantScope, str]] = ..., permissions: _Optional[_Union[AdditionalPermissions, _Mapping]] = ...) -> None: ...

class FeatureSwitches(_message.Message):
    __slots__ = ("shell_tool", "unified_exec", "unified_exec_tty", "shell_zsh_fork", "unified_exec_zsh_fork", "exec_permission_approvals", "request_permissions_tool")
    SHELL_TOOL_FIELD_NUMBER: _ClassVar[int]
    UNIFIED_EXEC_FIELD_NUMBER: _ClassVar[int]
    UNIFIED_EXEC_TTY_FIELD_NUMBER: _ClassVar[int]
    SHELL_ZSH_FORK_FIELD_NUMBER: _ClassVar[int]
    UNIFIED_EXEC_ZSH_FORK_FIELD_NUMBER: _ClassVar[int]
    EXEC_PERMISSION_APPROVALS_FIELD_NUMBER: _ClassVar[int]
    REQUEST_PERMISSIONS_TOOL_FIELD_NUMBER: _ClassVar[int]
    shell_tool: bool
    unified_exec: bool
    unified_exec_tty: bool
    shell_zsh_fork: bool
    unified_exec_zsh_fork: bool
    exec_permission_approvals: bool
    request_permissions_tool: bool
    def __init__(self, shell_tool: _Optional[bool] = ..., unified_exec: _Optional[bool] = ..., unified_exec_tty: _Optional[bool] = ..., shell_zsh_fork: _Optional[bool] = ..., unified_exec_zsh_fork: _Optional[bool] = ..., exec_permission_approvals: _Optional[bool] = ..., request_permissions_tool: _Optional[bool] = ...) -> None: ...

class TruncationPolicy(_message.Message):
    __slots__ = ("tokens", "bytes")
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    tokens: int
    bytes: int
    def __init__(self, tokens: _Optional[int] = ..., bytes: _Optional[int] = ...) -> None: ...

class TurnContext(_message.Message):
    __slots__ = ("environments", "approval_policy", "permission_profile", "shell_environment_policy", "shell_tool_type", "features", "allow_login_shell", "truncation_policy", "granted_permissions", "apply_patch_tool", "advertise_command_batches", "approval_route", "live_network_approvals")
    ENVIRONMENTS_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_POLICY_FIELD_NUMBER: _ClassVar[int]
    PERMISSION_PROFILE_FIELD_NUMBER: _ClassVar[int]
    SHELL_ENVIRONMENT_POLICY_FIELD_NUMBER: _ClassVar[int]
    SHELL_TOOL_TYPE_FIELD_NUMBER: _ClassVar[int]
    FEATURES_FIELD_NUMBER: _ClassVar[int]
    ALLOW_LOGIN_SHELL_FIELD_NUMBER: _ClassVar[int]
    TRUNCATION_POLICY_FIELD_NUMBER: _ClassVar[int]
    GRANTED_PERMISSIONS_FIELD_NUMBER: _ClassVar[int]
    APPLY_PATCH_TOOL_FIELD_NUMBER: _ClassVar[int]
    ADVERTISE_COMMAND_BATCHES_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_ROUTE_FIELD_NUMBER: _ClassVar[int]
    LIVE_NETWORK_APPROVALS_FIELD_NUMBER: _ClassVar[int]
    environments: _containers.RepeatedCompositeFieldContainer[TurnEnvironment]
    approval_policy: ApprovalPolicy
    permission_profile: PermissionProfile
    shell_environment_policy: _shell_pb2.ShellEnvironmentPolicy
    shell_tool_type: ModelShellToolType
    features: FeatureSwitches
    allow_login_shell: bool
    truncation_policy: TruncationPolicy
    granted_permissions: _containers.RepeatedCompositeFieldContainer[PermissionGrant]
    apply_patch_tool: ApplyPatchToolType
    advertise_command_batches: bool
    approval_route: ApprovalRoute
    live_network_approvals: bool
    def __init__(self, environments: _Optional[_Iterable[_Union[TurnEnvironment, _Mapping]]] = ..., approval_policy: _Optional[_Union[ApprovalPolicy, _Mapping]] = ..., permission_profile: _Optional[_Union[PermissionProfile, _Mapping]] = ..., shell_environment_policy: _Optional[_Union[_shell_pb2.ShellEnvironmentPolicy, _Mapping]] = ..., shell_tool_type: _Optional[_Union[ModelShellToolType, str]] = ..., features: _Optional[_Union[FeatureSwitches, _Mapping]] = ..., allow_login_shell: _Optional[bool] = ..., truncation_policy: _Optional[_Union[TruncationPolicy, _Mapping]] = ..., granted_permissions: _Optional[_Iterable[_Union[PermissionGrant, _Mapping]]] = ..., apply_patch_tool: _Optional[_Union[ApplyPatchToolType, str]] = ..., advertise_command_batches: _Optional[bool] = ..., approval_route: _Optional[_Union[ApprovalRoute, str]] = ..., live_network_approvals: _Optional[bool] = ...) -> None: ...
