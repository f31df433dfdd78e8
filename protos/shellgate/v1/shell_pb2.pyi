from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ShellType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SHELL_TYPE_UNSPECIFIED: _ClassVar[ShellType]
    SHELL_TYPE_ZSH: _ClassVar[ShellType]
    SHELL_TYPE_BASH: _ClassVar[ShellType]
    SHELL_TYPE_POWERSHELL: _ClassVar[ShellType]
    SHELL_TYPE_SH: _ClassVar[ShellType]
    SHELL_TYPE_CMD: _ClassVar[ShellType]

class ShellMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SHELL_MODE_UNSPECIFIED: _ClassVar[ShellMode]
    SHELL_MODE_DIRECT: _ClassVar[ShellMode]
    SHELL_MODE_ZSH_FORK: _ClassVar[ShellMode]

class ShellEnvironmentInherit(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SHELL_ENVIRONMENT_INHERIT_UNSPECIFIED: _ClassVar[ShellEnvironmentInherit]
    SHELL_ENVIRONMENT_INHERIT_ALL: _ClassVar[ShellEnvironmentInherit]
    SHELL_ENVIRONMENT_INHERIT_CORE: _ClassVar[ShellEnvironmentInherit]
    SHELL_ENVIRONMENT_INHERIT_NONE: _ClassVar[ShellEnvironmentInherit]

class SandboxMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SANDBOX_MODE_UNSPECIFIED: _ClassVar[SandboxMode]
    SANDBOX_MODE_NONE: _ClassVar[SandboxMode]
    SANDBOX_MODE_READ_ONLY: _ClassVar[SandboxMode]
    SANDBOX_MODE_WORKSPACE_WRITE: _ClassVar[SandboxMode]

class EgressMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EGRESS_MODE_UNSPECIFIED: _ClassVar[EgressMode]
    EGRESS_MODE_FULL: _ClassVar[EgressMode]
    EGRESS_MODE_LIMITED: _ClassVar[EgressMode]
SHELL_TYPE_UNSPECIFIED: ShellType
SHELL_TYPE_ZSH: ShellType
SHELL_TYPE_BASH: ShellType
SHELL_TYPE_POWERSHELL: ShellType
SHELL_TYPE_SH: ShellType
SHELL_TYPE_CMD: ShellType
SHELL_MODE_UNSPECIFIED: ShellMode
SHELL_MODE_DIRECT: ShellMode
SHELL_MODE_ZSH_FORK: ShellMode
SHELL_ENVIRONMENT_INHERIT_UNSPECIFIED: ShellEnvironmentInherit
SHELL_ENVIRONMENT_INHERIT_ALL: ShellEnvironmentInherit
SHELL_ENVIRONMENT_INHERIT_CORE: ShellEnvironmentInherit
SHELL_ENVIRONMENT_INHERIT_NONE: ShellEnvironmentInherit
SANDBOX_MODE_UNSPECIFIED: SandboxMode
SANDBOX_MODE_NONE: SandboxMode
SANDBOX_MODE_READ_ONLY: SandboxMode
SANDBOX_MODE_WORKSPACE_WRITE: SandboxMode
EGRESS_MODE_UNSPECIFIED: EgressMode
EGRESS_MODE_FULL: EgressMode
EGRESS_MODE_LIMITED: EgressMode

class ShellInfo(_message.Message):
    __slots__ = ("type", "path")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    type: ShellType
    path: str
    def __init__(self, type: _Optional[_Union[ShellType, str]] = ..., path: _Optional[str] = ...) -> None: ...

class ShellEnvironmentPolicy(_message.Message):
    __slots__ = ("inherit", "ignore_default_excludes", "exclude", "set", "include_only")
    class SetEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    INHERIT_FIELD_NUMBER: _ClassVar[int]
    IGNORE_DEFAULT_EXCLUDES_FIELD_NUMBER: _ClassVar[int]
    EXCLUDE_FIELD_NUMBER: _ClassVar[int]
    SET_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_ONLY_FIELD_NUMBER: _ClassVar[int]
    inherit: ShellEnvironmentInherit
    ignore_default_excludes: bool
    exclude: _containers.RepeatedScalarFieldContainer[str]
    set: _containers.ScalarMap[str, str]
    include_only: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, inherit: _Optional[_Union[ShellEnvironmentInherit, str]] = ..., ignore_default_excludes: _Optional[bool] = ..., exclude: _Optional[_Iterable[str]] = ..., set: _Optional[_Mapping[str, str]] = ..., include_only: _Optional[_Iterable[str]] = ...) -> None: ...

class SandboxRequest(_message.Message):
    __slots__ = ("mode", "writable_roots", "network_access", "egress")
    MODE_FIELD_NUMBER: _ClassVar[int]
    WRITABLE_ROOTS_FIELD_NUMBER: _ClassVar[int]
    NETWORK_ACCESS_FIELD_NUMBER: _ClassVar[int]
    EGRESS_FIELD_NUMBER: _ClassVar[int]
    mode: SandboxMode
    writable_roots: _containers.RepeatedScalarFieldContainer[str]
    network_access: bool
    egress: EgressNarrowing
    def __init__(self, mode: _Optional[_Union[SandboxMode, str]] = ..., writable_roots: _Optional[_Iterable[str]] = ..., network_access: _Optional[bool] = ..., egress: _Optional[_Union[EgressNarrowing, _Mapping]] = ...) -> None: ...

class EgressNarrowing(_message.Message):
    __slots__ = ("mode", "allowed_domains", "denied_domains")
    MODE_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_DOMAINS_FIELD_NUMBER: _ClassVar[int]
    DENIED_DOMAINS_FIELD_NUMBER: _ClassVar[int]
    mode: EgressMode
    allowed_domains: _containers.RepeatedScalarFieldContainer[str]
    denied_domains: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, mode: _Optional[_Union[EgressMode, str]] = ..., allowed_domains: _Optional[_Iterable[str]] = ..., denied_domains: _Optional[_Iterable[str]] = ...) -> None: ...
