from shellgate.v1 import shell_pb2 as _shell_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ExecBackend(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EXEC_BACKEND_UNSPECIFIED: _ClassVar[ExecBackend]
    EXEC_BACKEND_LOCAL: _ClassVar[ExecBackend]
    EXEC_BACKEND_SSH: _ClassVar[ExecBackend]

class OutputStream(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OUTPUT_STREAM_UNSPECIFIED: _ClassVar[OutputStream]
    OUTPUT_STREAM_STDOUT: _ClassVar[OutputStream]
    OUTPUT_STREAM_STDERR: _ClassVar[OutputStream]
    OUTPUT_STREAM_PTY: _ClassVar[OutputStream]

class GapReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    GAP_REASON_UNSPECIFIED: _ClassVar[GapReason]
    GAP_REASON_EVICTED: _ClassVar[GapReason]
    GAP_REASON_SLOW_CONSUMER: _ClassVar[GapReason]

class ProcessSignal(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PROCESS_SIGNAL_UNSPECIFIED: _ClassVar[ProcessSignal]
    PROCESS_SIGNAL_INTERRUPT: _ClassVar[ProcessSignal]
    PROCESS_SIGNAL_TERMINATE: _ClassVar[ProcessSignal]
    PROCESS_SIGNAL_KILL: _ClassVar[ProcessSignal]
    PROCESS_SIGNAL_HANGUP: _ClassVar[ProcessSignal]

class ProcessState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PROCESS_STATE_UNSPECIFIED: _ClassVar[ProcessState]
    PROCESS_STATE_RUNNING: _ClassVar[ProcessState]
    PROCESS_STATE_AWAITING_INPUT: _ClassVar[ProcessState]
    PROCESS_STATE_EXITED: _ClassVar[ProcessState]
    PROCESS_STATE_CLOSED: _ClassVar[ProcessState]
    PROCESS_STATE_LOST: _ClassVar[ProcessState]

class FileKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    FILE_KIND_UNSPECIFIED: _ClassVar[FileKind]
    FILE_KIND_FILE: _ClassVar[FileKind]
    FILE_KIND_DIRECTORY: _ClassVar[FileKind]
    FILE_KIND_SYMLINK: _ClassVar[FileKind]
    FILE_KIND_OTHER: _ClassVar[FileKind]
EXEC_BACKEND_UNSPECIFIED: ExecBackend
EXEC_BACKEND_LOCAL: ExecBackend
EXEC_BACKEND_SSH: ExecBackend
OUTPUT_STREAM_UNSPECIFIED: OutputStream
OUTPUT_STREAM_STDOUT: OutputStream
OUTPUT_STREAM_STDERR: OutputStream
OUTPUT_STREAM_PTY: OutputStream
GAP_REASON_UNSPECIFIED: GapReason
GAP_REASON_EVICTED: GapReason
GAP_REASON_SLOW_CONSUMER: GapReason
PROCESS_SIGNAL_UNSPECIFIED: ProcessSignal
PROCESS_SIGNAL_INTERRUPT: ProcessSignal
PROCESS_SIGNAL_TERMINATE: ProcessSignal
PROCESS_SIGNAL_KILL: ProcessSignal
PROCESS_SIGNAL_HANGUP: ProcessSignal
PROCESS_STATE_UNSPECIFIED: ProcessState
PROCESS_STATE_RUNNING: ProcessState
PROCESS_STATE_AWAITING_INPUT: ProcessState
PROCESS_STATE_EXITED: ProcessState
PROCESS_STATE_CLOSED: ProcessState
PROCESS_STATE_LOST: ProcessState
FILE_KIND_UNSPECIFIED: FileKind
FILE_KIND_FILE: FileKind
FILE_KIND_DIRECTORY: FileKind
FILE_KIND_SYMLINK: FileKind
FILE_KIND_OTHER: FileKind

class GetInfoRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ExecCapabilities(_message.Message):
    __slots__ = ("pty", "signals", "sandbox", "sandbox_unavailable_reason")
    PTY_FIELD_NUMBER: _ClassVar[int]
    SIGNALS_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_UNAVAILABLE_REASON_FIELD_NUMBER: _ClassVar[int]
    pty: bool
    signals: bool
    sandbox: bool
    sandbox_unavailable_reason: str
    def __init__(self, pty: _Optional[bool] = ..., signals: _Optional[bool] = ..., sandbox: _Optional[bool] = ..., sandbox_unavailable_reason: _Optional[str] = ...) -> None: ...

class ExecLimits(_message.Message):
    __slots__ = ("retained_output_bytes", "exited_retention_ms", "default_owner_ttl_ms", "request_id_ttl_ms", "max_processes", "max_file_bytes", "max_chunk_bytes", "max_message_bytes", "max_wait_ms")
    RETAINED_OUTPUT_BYTES_FIELD_NUMBER: _ClassVar[int]
    EXITED_RETENTION_MS_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_OWNER_TTL_MS_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_TTL_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_PROCESSES_FIELD_NUMBER: _ClassVar[int]
    MAX_FILE_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_CHUNK_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_MESSAGE_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_WAIT_MS_FIELD_NUMBER: _ClassVar[int]
    retained_output_bytes: int
    exited_retention_ms: int
    default_owner_ttl_ms: int
    request_id_ttl_ms: int
    max_processes: int
    max_file_bytes: int
    max_chunk_bytes: int
    max_message_bytes: int
    max_wait_ms: int
    def __init__(self, retained_output_bytes: _Optional[int] = ..., exited_retention_ms: _Optional[int] = ..., default_owner_ttl_ms: _Optional[int] = ..., request_id_ttl_ms: _Optional[int] = ..., max_processes: _Optional[int] = ..., max_file_bytes: _Optional[int] = ..., max_chunk_bytes: _Optional[int] = ..., max_message_bytes: _Optional[int] = ..., max_wait_ms: _Optional[int] = ...) -> None: ...

class GetInfoResponse(_message.Message):
    __slots__ = ("shell", "cwd", "os", "arch", "hostname", "user", "home", "backend", "capabilities", "version", "limits", "caller")
    SHELL_FIELD_NUMBER: _ClassVar[int]
    CWD_FIELD_NUMBER: _ClassVar[int]
    OS_FIELD_NUMBER: _ClassVar[int]
    ARCH_FIELD_NUMBER: _ClassVar[int]
    HOSTNAME_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    HOME_FIELD_NUMBER: _ClassVar[int]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    CAPABILITIES_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    CALLER_FIELD_NUMBER: _ClassVar[int]
    shell: _shell_pb2.ShellInfo
    cwd: str
    os: str
    arch: str
    hostname: str
    user: str
    home: str
    backend: ExecBackend
    capabilities: ExecCapabilities
    version: str
    limits: ExecLimits
    caller: str
    def __init__(self, shell: _Optional[_Union[_shell_pb2.ShellInfo, _Mapping]] = ..., cwd: _Optional[str] = ..., os: _Optional[str] = ..., arch: _Optional[str] = ..., hostname: _Optional[str] = ..., user: _Optional[str] = ..., home: _Optional[str] = ..., backend: _Optional[_Union[ExecBackend, str]] = ..., capabilities: _Optional[_Union[ExecCapabilities, _Mapping]] = ..., version: _Optional[str] = ..., limits: _Optional[_Union[ExecLimits, _Mapping]] = ..., caller: _Optional[str] = ...) -> None: ...

class StartRequest(_message.Message):
    __slots__ = ("owner", "request_id", "argv", "arg0", "cwd", "env_policy", "env", "tty", "rows", "cols", "stdin_open", "shell_mode", "shell_type", "sandbox", "timeout_ms", "detach", "owner_ttl_ms", "approved_cwd", "coalesce_ms")
    class EnvEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    OWNER_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    ARGV_FIELD_NUMBER: _ClassVar[int]
    ARG0_FIELD_NUMBER: _ClassVar[int]
    CWD_FIELD_NUMBER: _ClassVar[int]
    ENV_POLICY_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    TTY_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    COLS_FIELD_NUMBER: _ClassVar[int]
    STDIN_OPEN_FIELD_NUMBER: _ClassVar[int]
    SHELL_MODE_FIELD_NUMBER: _ClassVar[int]
    SHELL_TYPE_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    DETACH_FIELD_NUMBER: _ClassVar[int]
    OWNER_TTL_MS_FIELD_NUMBER: _ClassVar[int]
    APPROVED_CWD_FIELD_NUMBER: _ClassVar[int]
    COALESCE_MS_FIELD_NUMBER: _ClassVar[int]
    owner: str
    request_id: str
    argv: _containers.RepeatedScalarFieldContainer[str]
    arg0: str
    cwd: str
    env_policy: _shell_pb2.ShellEnvironmentPolicy
    env: _containers.ScalarMap[str, str]
    tty: bool
    rows: int
    cols: int
    stdin_open: bool
    shell_mode: _shell_pb2.ShellMode
    shell_type: _shell_pb2.ShellType
    sandbox: _shell_pb2.SandboxRequest
    timeout_ms: int
    detach: bool
    owner_ttl_ms: int
    approved_cwd: CwdIdentity
    coalesce_ms: int
    def __init__(self, owner: _Optional[str] = ..., request_id: _Optional[str] = ..., argv: _Optional[_Iterable[str]] = ..., arg0: _Optional[str] = ..., cwd: _Optional[str] = ..., env_policy: _Optional[_Union[_shell_pb2.ShellEnvironmentPolicy, _Mapping]] = ..., env: _Optional[_Mapping[str, str]] = ..., tty: _Optional[bool] = ..., rows: _Optional[int] = ..., cols: _Optional[int] = ..., stdin_open: _Optional[bool] = ..., shell_mode: _Optional[_Union[_shell_pb2.ShellMode, str]] = ..., shell_type: _Optional[_Union[_shell_pb2.ShellType, str]] = ..., sandbox: _Optional[_Union[_shell_pb2.SandboxRequest, _Mapping]] = ..., timeout_ms: _Optional[int] = ..., detach: _Optional[bool] = ..., owner_ttl_ms: _Optional[int] = ..., approved_cwd: _Optional[_Union[CwdIdentity, _Mapping]] = ..., coalesce_ms: _Optional[int] = ...) -> None: ...

class CwdIdentity(_message.Message):
    __slots__ = ("device", "inode")
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    INODE_FIELD_NUMBER: _ClassVar[int]
    device: int
    inode: int
    def __init__(self, device: _Optional[int] = ..., inode: _Optional[int] = ...) -> None: ...

class ProcessStarted(_message.Message):
    __slots__ = ("process_id", "pid", "sandboxed", "reused")
    PROCESS_ID_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    SANDBOXED_FIELD_NUMBER: _ClassVar[int]
    REUSED_FIELD_NUMBER: _ClassVar[int]
    process_id: str
    pid: int
    sandboxed: bool
    reused: bool
    def __init__(self, process_id: _Optional[str] = ..., pid: _Optional[int] = ..., sandboxed: _Optional[bool] = ..., reused: _Optional[bool] = ...) -> None: ...

class SpawnFailed(_message.Message):
    __slots__ = ("errno", "message")
    ERRNO_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    errno: int
    message: str
    def __init__(self, errno: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

class OutputChunk(_message.Message):
    __slots__ = ("seq", "stream", "data", "end_offset")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    END_OFFSET_FIELD_NUMBER: _ClassVar[int]
    seq: int
    stream: OutputStream
    data: bytes
    end_offset: int
    def __init__(self, seq: _Optional[int] = ..., stream: _Optional[_Union[OutputStream, str]] = ..., data: _Optional[bytes] = ..., end_offset: _Optional[int] = ...) -> None: ...

class ExitStatus(_message.Message):
    __slots__ = ("code", "signal", "timed_out")
    CODE_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_FIELD_NUMBER: _ClassVar[int]
    TIMED_OUT_FIELD_NUMBER: _ClassVar[int]
    code: int
    signal: int
    timed_out: bool
    def __init__(self, code: _Optional[int] = ..., signal: _Optional[int] = ..., timed_out: _Optional[bool] = ...) -> None: ...

class ProcessExited(_message.Message):
    __slots__ = ("seq", "status", "sandbox_denied")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_DENIED_FIELD_NUMBER: _ClassVar[int]
    seq: int
    status: ExitStatus
    sandbox_denied: bool
    def __init__(self, seq: _Optional[int] = ..., status: _Optional[_Union[ExitStatus, _Mapping]] = ..., sandbox_denied: _Optional[bool] = ...) -> None: ...

class ProcessClosed(_message.Message):
    __slots__ = ("seq", "sandbox_denied")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_DENIED_FIELD_NUMBER: _ClassVar[int]
    seq: int
    sandbox_denied: bool
    def __init__(self, seq: _Optional[int] = ..., sandbox_denied: _Optional[bool] = ...) -> None: ...

class AwaitingInput(_message.Message):
    __slots__ = ("last_seq",)
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    last_seq: int
    def __init__(self, last_seq: _Optional[int] = ...) -> None: ...

class ProcessLost(_message.Message):
    __slots__ = ("reason", "last_seq")
    REASON_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    reason: str
    last_seq: int
    def __init__(self, reason: _Optional[str] = ..., last_seq: _Optional[int] = ...) -> None: ...

class OutputGap(_message.Message):
    __slots__ = ("first_seq", "last_seq", "reason")
    FIRST_SEQ_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    first_seq: int
    last_seq: int
    reason: GapReason
    def __init__(self, first_seq: _Optional[int] = ..., last_seq: _Optional[int] = ..., reason: _Optional[_Union[GapReason, str]] = ...) -> None: ...

class ProcessEvent(_message.Message):
    __slots__ = ("started", "spawn_failed", "output", "exited", "closed", "awaiting_input", "gap", "lost")
    STARTED_FIELD_NUMBER: _ClassVar[int]
    SPAWN_FAILED_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    EXITED_FIELD_NUMBER: _ClassVar[int]
    CLOSED_FIELD_NUMBER: _ClassVar[int]
    AWAITING_INPUT_FIELD_NUMBER: _ClassVar[int]
    GAP_FIELD_NUMBER: _ClassVar[int]
    LOST_FIELD_NUMBER: _ClassVar[int]
    started: ProcessStarted
    spawn_failed: SpawnFailed
    output: OutputChunk
    exited: ProcessExited
    closed: ProcessClosed
    awaiting_input: AwaitingInput
    gap: OutputGap
    lost: ProcessLost
    def __init__(self, started: _Optional[_Union[ProcessStarted, _Mapping]] = ..., spawn_failed: _Optional[_Union[SpawnFailed, _Mapping]] = ..., output: _Optional[_Union[OutputChunk, _Mapping]] = ..., exited: _Optional[_Union[ProcessExited, _Mapping]] = ..., closed: _Optional[_Union[ProcessClosed, _Mapping]] = ..., awaiting_input: _Optional[_Union[AwaitingInput, _Mapping]] = ..., gap: _Optional[_Union[OutputGap, _Mapping]] = ..., lost: _Optional[_Union[ProcessLost, _Mapping]] = ...) -> None: ...

class StartResponse(_message.Message):
    __slots__ = ("event", "more")
    EVENT_FIELD_NUMBER: _ClassVar[int]
    MORE_FIELD_NUMBER: _ClassVar[int]
    event: ProcessEvent
    more: _containers.RepeatedCompositeFieldContainer[ProcessEvent]
    def __init__(self, event: _Optional[_Union[ProcessEvent, _Mapping]] = ..., more: _Optional[_Iterable[_Union[ProcessEvent, _Mapping]]] = ...) -> None: ...

class AttachRequest(_message.Message):
    __slots__ = ("process_id", "after_seq")
    PROCESS_ID_FIELD_NUMBER: _ClassVar[int]
    AFTER_SEQ_FIELD_NUMBER: _ClassVar[int]
    process_id: str
    after_seq: int
    def __init__(self, process_id: _Optional[str] = ..., after_seq: _Optional[int] = ...) -> None: ...

class AttachResponse(_message.Message):
    __slots__ = ("event",)
    EVENT_FIELD_NUMBER: _ClassVar[int]
    event: ProcessEvent
    def __init__(self, event: _Optional[_Union[ProcessEvent, _Mapping]] = ...) -> None: ...

class ReadRequest(_message.Message):
    __slots__ = ("process_id", "after_seq", "max_bytes", "wait_ms")
    PROCESS_ID_FIELD_NUMBER: _ClassVar[int]
    AFTER_SEQ_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    WAIT_MS_FIELD_NUMBER: _ClassVar[int]
    process_id: str
    after_seq: int
    max_bytes: int
    wait_ms: int
    def __init__(self, process_id: _Optional[str] = ..., after_seq: _Optional[int] = ..., max_bytes: _Optional[int] = ..., wait_ms: _Optional[int] = ...) -> None: ...

class ReadResponse(_message.Message):
    __slots__ = ("chunks", "next_seq", "exited", "exit_status", "closed", "failure", "sandbox_denied")
    CHUNKS_FIELD_NUMBER: _ClassVar[int]
    NEXT_SEQ_FIELD_NUMBER: _ClassVar[int]
    EXITED_FIELD_NUMBER: _ClassVar[int]
    EXIT_STATUS_FIELD_NUMBER: _ClassVar[int]
    CLOSED_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_DENIED_FIELD_NUMBER: _ClassVar[int]
    chunks: _containers.RepeatedCompositeFieldContainer[OutputChunk]
    next_seq: int
    exited: bool
    exit_status: ExitStatus
    closed: bool
    failure: str
    sandbox_denied: bool
    def __init__(self, chunks: _Optional[_Iterable[_Union[OutputChunk, _Mapping]]] = ..., next_seq: _Optional[int] = ..., exited: _Optional[bool] = ..., exit_status: _Optional[_Union[ExitStatus, _Mapping]] = ..., closed: _Optional[bool] = ..., failure: _Optional[str] = ..., sandbox_denied: _Optional[bool] = ...) -> None: ...

class WriteRequest(_message.Message):
    __slots__ = ("process_id", "data")
    PROCESS_ID_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    process_id: str
    data: bytes
    def __init__(self, process_id: _Optional[str] = ..., data: _Optional[bytes] = ...) -> None: ...

class WriteResponse(_message.Message):
    __slots__ = ("accepted_bytes",)
    ACCEPTED_BYTES_FIELD_NUMBER: _ClassVar[int]
    accepted_bytes: int
    def __init__(self, accepted_bytes: _Optional[int] = ...) -> None: ...

class CloseStdinRequest(_message.Message):
    __slots__ = ("process_id",)
    PROCESS_ID_FIELD_NUMBER: _ClassVar[int]
    process_id: str
    def __init__(self, process_id: _Optional[str] = ...) -> None: ...

class CloseStdinResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SignalRequest(_message.Message):
    __slots__ = ("process_id", "signal")
    PROCESS_ID_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_FIELD_NUMBER: _ClassVar[int]
    process_id: str
    signal: ProcessSignal
    def __init__(self, process_id: _Optional[str] = ..., signal: _Optional[_Union[ProcessSignal, str]] = ...) -> None: ...

class SignalResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ResizeRequest(_message.Message):
    __slots__ = ("process_id", "rows", "cols")
    PROCESS_ID_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    COLS_FIELD_NUMBER: _ClassVar[int]
    process_id: str
    rows: int
    cols: int
    def __init__(self, process_id: _Optional[str] = ..., rows: _Optional[int] = ..., cols: _Optional[int] = ...) -> None: ...

class ResizeResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class TerminateRequest(_message.Message):
    __slots__ = ("process_id",)
    PROCESS_ID_FIELD_NUMBER: _ClassVar[int]
    process_id: str
    def __init__(self, process_id: _Optional[str] = ...) -> None: ...

class TerminateResponse(_message.Message):
    __slots__ = ("running",)
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    running: bool
    def __init__(self, running: _Optional[bool] = ...) -> None: ...

class ListRequest(_message.Message):
    __slots__ = ("owner",)
    OWNER_FIELD_NUMBER: _ClassVar[int]
    owner: str
    def __init__(self, owner: _Optional[str] = ...) -> None: ...

class ProcessInfo(_message.Message):
    __slots__ = ("process_id", "owner", "argv", "cwd", "pid", "state", "tty", "detached", "next_seq", "exit_status", "started_at_ms", "last_activity_ms")
    PROCESS_ID_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    ARGV_FIELD_NUMBER: _ClassVar[int]
    CWD_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TTY_FIELD_NUMBER: _ClassVar[int]
    DETACHED_FIELD_NUMBER: _ClassVar[int]
    NEXT_SEQ_FIELD_NUMBER: _ClassVar[int]
    EXIT_STATUS_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    LAST_ACTIVITY_MS_FIELD_NUMBER: _ClassVar[int]
    process_id: str
    owner: str
    argv: _containers.RepeatedScalarFieldContainer[str]
    cwd: str
    pid: int
    state: ProcessState
    tty: bool
    detached: bool
    next_seq: int
    exit_status: ExitStatus
    started_at_ms: int
    last_activity_ms: int
    def __init__(self, process_id: _Optional[str] = ..., owner: _Optional[str] = ..., argv: _Optional[_Iterable[str]] = ..., cwd: _Optional[str] = ..., pid: _Optional[int] = ..., state: _Optional[_Union[ProcessState, str]] = ..., tty: _Optional[bool] = ..., detached: _Optional[bool] = ..., next_seq: _Optional[int] = ..., exit_status: _Optional[_Union[ExitStatus, _Mapping]] = ..., started_at_ms: _Optional[int] = ..., last_activity_ms: _Optional[int] = ...) -> None: ...

class ListResponse(_message.Message):
    __slots__ = ("processes",)
    PROCESSES_FIELD_NUMBER: _ClassVar[int]
    processes: _containers.RepeatedCompositeFieldContainer[ProcessInfo]
    def __init__(self, processes: _Optional[_Iterable[_Union[ProcessInfo, _Mapping]]] = ...) -> None: ...

class ReadFileRequest(_message.Message):
    __slots__ = ("path", "sandbox")
    PATH_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    path: str
    sandbox: _shell_pb2.SandboxRequest
    def __init__(self, path: _Optional[str] = ..., sandbox: _Optional[_Union[_shell_pb2.SandboxRequest, _Mapping]] = ...) -> None: ...

class ReadFileResponse(_message.Message):
    __slots__ = ("data",)
    DATA_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    def __init__(self, data: _Optional[bytes] = ...) -> None: ...

class WriteFileRequest(_message.Message):
    __slots__ = ("path", "data", "mode", "create_parents", "sandbox")
    PATH_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    CREATE_PARENTS_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    path: str
    data: bytes
    mode: int
    create_parents: bool
    sandbox: _shell_pb2.SandboxRequest
    def __init__(self, path: _Optional[str] = ..., data: _Optional[bytes] = ..., mode: _Optional[int] = ..., create_parents: _Optional[bool] = ..., sandbox: _Optional[_Union[_shell_pb2.SandboxRequest, _Mapping]] = ...) -> None: ...

class WriteFileResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RemoveRequest(_message.Message):
    __slots__ = ("path", "recursive", "missing_ok", "sandbox")
    PATH_FIELD_NUMBER: _ClassVar[int]
    RECURSIVE_FIELD_NUMBER: _ClassVar[int]
    MISSING_OK_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    path: str
    recursive: bool
    missing_ok: bool
    sandbox: _shell_pb2.SandboxRequest
    def __init__(self, path: _Optional[str] = ..., recursive: _Optional[bool] = ..., missing_ok: _Optional[bool] = ..., sandbox: _Optional[_Union[_shell_pb2.SandboxRequest, _Mapping]] = ...) -> None: ...

class RemoveResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RenameRequest(_message.Message):
    __slots__ = ("from_path", "to_path", "create_parents", "sandbox")
    FROM_PATH_FIELD_NUMBER: _ClassVar[int]
    TO_PATH_FIELD_NUMBER: _ClassVar[int]
    CREATE_PARENTS_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    from_path: str
    to_path: str
    create_parents: bool
    sandbox: _shell_pb2.SandboxRequest
    def __init__(self, from_path: _Optional[str] = ..., to_path: _Optional[str] = ..., create_parents: _Optional[bool] = ..., sandbox: _Optional[_Union[_shell_pb2.SandboxRequest, _Mapping]] = ...) -> None: ...

class RenameResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class StatRequest(_message.Message):
    __slots__ = ("path", "follow_symlinks", "sandbox")
    PATH_FIELD_NUMBER: _ClassVar[int]
    FOLLOW_SYMLINKS_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    path: str
    follow_symlinks: bool
    sandbox: _shell_pb2.SandboxRequest
    def __init__(self, path: _Optional[str] = ..., follow_symlinks: _Optional[bool] = ..., sandbox: _Optional[_Union[_shell_pb2.SandboxRequest, _Mapping]] = ...) -> None: ...

class StatResponse(_message.Message):
    __slots__ = ("exists", "kind", "size", "mode", "modified_ms", "identity")
    EXISTS_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    MODIFIED_MS_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    exists: bool
    kind: FileKind
    size: int
    mode: int
    modified_ms: int
    identity: CwdIdentity
    def __init__(self, exists: _Optional[bool] = ..., kind: _Optional[_Union[FileKind, str]] = ..., size: _Optional[int] = ..., mode: _Optional[int] = ..., modified_ms: _Optional[int] = ..., identity: _Optional[_Union[CwdIdentity, _Mapping]] = ...) -> None: ...

class MakeDirectoryRequest(_message.Message):
    __slots__ = ("path", "parents", "sandbox")
    PATH_FIELD_NUMBER: _ClassVar[int]
    PARENTS_FIELD_NUMBER: _ClassVar[int]
    SANDBOX_FIELD_NUMBER: _ClassVar[int]
    path: str
    parents: bool
    sandbox: _shell_pb2.SandboxRequest
    def __init__(self, path: _Optional[str] = ..., parents: _Optional[bool] = ..., sandbox: _Optional[_Union[_shell_pb2.SandboxRequest, _Mapping]] = ...) -> None: ...

class MakeDirectoryResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
