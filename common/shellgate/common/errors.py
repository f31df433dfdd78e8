"""Domain errors of the exec-server, each carrying its gRPC status code name and a reason."""

from __future__ import annotations

from typing import ClassVar


class ExecServerError(Exception):
    """Base of every error that becomes a gRPC status; subclasses set `code` and `reason`."""

    code: ClassVar[str] = "INTERNAL"
    reason: ClassVar[str] = "internal"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidArgumentError(ExecServerError):
    """A request field is malformed or out of its limit (the message names the field)."""

    code = "INVALID_ARGUMENT"
    reason = "invalid_argument"


class UnauthenticatedError(ExecServerError):
    """No, bad or expired credentials."""

    code = "UNAUTHENTICATED"
    reason = "unauthenticated"


class ProcessNotFoundError(ExecServerError):
    """Unknown process id for this caller (other callers' processes look unknown too)."""

    code = "NOT_FOUND"
    reason = "unknown_process"


class FileNotFoundExecError(ExecServerError):
    """A file operation named a path that does not exist."""

    code = "NOT_FOUND"
    reason = "no_such_file"


class PathNotAllowedError(ExecServerError):
    """A file operation outside the writable roots of the requested sandbox."""

    code = "PERMISSION_DENIED"
    reason = "path_not_writable"


class UnsupportedShellModeError(ExecServerError):
    """The daemon runs argv directly (Direct mode) and refuses anything else."""

    code = "FAILED_PRECONDITION"
    reason = "unsupported_shell_mode"


class ShellMismatchError(ExecServerError):
    """The request names a shell type different from the daemon's native one."""

    code = "FAILED_PRECONDITION"
    reason = "shell_mismatch"


class SandboxUnavailableError(ExecServerError):
    """A sandbox was requested but this host cannot apply it; nothing runs unsandboxed."""

    code = "FAILED_PRECONDITION"
    reason = "sandbox_unavailable"


class ProcessExitedError(ExecServerError):
    """Signal, write or resize sent to a process that already finished."""

    code = "FAILED_PRECONDITION"
    reason = "process_exited"


class StdinClosedError(ExecServerError):
    """Write to a process whose stdin is not open (pipes without stdin, or after EOF)."""

    code = "FAILED_PRECONDITION"
    reason = "stdin_closed"


class NotATtyError(ExecServerError):
    """Resize of a process that has no PTY."""

    code = "FAILED_PRECONDITION"
    reason = "not_a_tty"


class HostKeyMismatchError(ExecServerError):
    """The SSH host key does not match the pinned key."""

    code = "FAILED_PRECONDITION"
    reason = "host_key_mismatch"


class SpawnError(ExecServerError):
    """The process could not be started (missing program or cwd, permission)."""

    code = "FAILED_PRECONDITION"
    reason = "spawn_failed"

    def __init__(self, message: str, errno: int = 0) -> None:
        super().__init__(message)
        self.errno = errno


class FileOperationError(ExecServerError):
    """A file operation failed for a reason other than a missing path."""

    code = "FAILED_PRECONDITION"
    reason = "file_operation_failed"


class LimitExceededError(ExecServerError):
    """A concurrency cap or quota was reached."""

    code = "RESOURCE_EXHAUSTED"
    reason = "limit_exceeded"


class EnvironmentLostError(ExecServerError):
    """The environment (SSH connection) is unreachable."""

    code = "UNAVAILABLE"
    reason = "environment_lost"


class DrainingError(ExecServerError):
    """The daemon is shutting down and accepts no new work."""

    code = "UNAVAILABLE"
    reason = "draining"


def all_error_classes() -> list[type[ExecServerError]]:
    """Every concrete domain error class (the table a test walks)."""
    found: list[type[ExecServerError]] = []
    pending: list[type[ExecServerError]] = [ExecServerError]
    while pending:
        cls = pending.pop()
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return found
