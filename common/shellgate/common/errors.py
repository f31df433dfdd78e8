"""Every domain error of both daemons: one table, each class a row (gRPC code, stable reason).

The boundary (`shellgate.common.boundary`) sends an error as its status code, its message
and a `google.rpc.ErrorInfo` detail (domain "shellgate", the reason, `errno` when set, and
`limit` — the configuration key that was crossed — for refusals past a configured bound);
`shellgate.common.grpc.status.error_from_status` rebuilds the same class from the reason.
One class per status code sits under the base; a reason it does not know degrades to it.
Model-level failures (exit codes, timeouts, policy rejections) are tool outputs, not these.

    ServiceError                        INTERNAL             internal
    ├── InvalidArgumentError            INVALID_ARGUMENT     invalid_argument
    ├── UnauthenticatedError            UNAUTHENTICATED      unauthenticated
    ├── PermissionDeniedError           PERMISSION_DENIED    permission_denied
    │   ├── PathNotAllowedError                              path_not_writable
    │   ├── EnvironmentNotAllowedError                       environment_not_allowed
    │   ├── OperatorRouteError                               operator_route
    │   ├── SelfApprovalError                                self_approval
    │   ├── NotOperatorError                                 not_operator
    │   └── NotTheCallerError                                not_the_caller
    ├── NotFoundError                   NOT_FOUND            not_found
    │   ├── ProcessNotFoundError                             unknown_process
    │   ├── FileNotFoundExecError                            no_such_file (errno)
    │   ├── UnknownThreadError                               unknown_thread
    │   ├── UnknownApprovalError                             unknown_approval
    │   ├── AlreadyDecidedError                              already_decided
    │   ├── UnknownSessionError                              unknown_session
    │   ├── UnknownCallError                                 unknown_call
    │   └── EnvironmentNotFoundError                         unknown_environment
    ├── FailedPreconditionError         FAILED_PRECONDITION  failed_precondition
    │   ├── UnsupportedShellModeError                        unsupported_shell_mode
    │   ├── ShellMismatchError                               shell_mismatch
    │   ├── SandboxUnavailableError                          sandbox_unavailable
    │   ├── ProcessExitedError                               process_exited
    │   ├── StdinClosedError                                 stdin_closed
    │   ├── NotATtyError                                     not_a_tty
    │   ├── HostKeyMismatchError                             host_key_mismatch
    │   ├── SpawnError                                       spawn_failed (errno)
    │   ├── FileOperationError                               file_operation_failed (errno)
    │   ├── ParkedCallChangedError                           parked_call_changed
    │   ├── CallIdConflictError                              call_id_conflict
    │   ├── CallAwaitingApprovalError                        call_awaiting_approval
    │   └── ApprovalExpiredError                             approval_expired
    ├── ResourceExhaustedError          RESOURCE_EXHAUSTED   resource_exhausted
    │   └── LimitExceededError                               limit_exceeded
    └── UnavailableError                UNAVAILABLE          unavailable
        ├── EnvironmentLostError                             environment_lost
        ├── DrainingError                                    draining
        ├── SharedStateUnavailableError                      shared_state_unavailable
        └── CallRunningElsewhereError                        call_running_elsewhere
"""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "AlreadyDecidedError",
    "ApprovalExpiredError",
    "CallAwaitingApprovalError",
    "CallIdConflictError",
    "CallRunningElsewhereError",
    "DrainingError",
    "EnvironmentLostError",
    "EnvironmentNotAllowedError",
    "EnvironmentNotFoundError",
    "FailedPreconditionError",
    "FileNotFoundExecError",
    "FileOperationError",
    "HostKeyMismatchError",
    "InvalidArgumentError",
    "LimitExceededError",
    "NotATtyError",
    "NotFoundError",
    "NotOperatorError",
    "NotTheCallerError",
    "OperatorRouteError",
    "ParkedCallChangedError",
    "PathNotAllowedError",
    "PermissionDeniedError",
    "ProcessExitedError",
    "ProcessNotFoundError",
    "ResourceExhaustedError",
    "SandboxUnavailableError",
    "SelfApprovalError",
    "ServiceError",
    "SharedStateUnavailableError",
    "ShellMismatchError",
    "SpawnError",
    "StdinClosedError",
    "UnauthenticatedError",
    "UnavailableError",
    "UnknownApprovalError",
    "UnknownCallError",
    "UnknownSessionError",
    "UnknownThreadError",
    "UnsupportedShellModeError",
    "all_error_classes",
]


class ServiceError(Exception):
    """Base of every error that becomes a gRPC status; subclasses set `code` and `reason`."""

    code: ClassVar[str] = "INTERNAL"
    reason: ClassVar[str] = "internal"

    def __init__(self, message: str, errno: int | None = None, *, limit: str = "") -> None:
        if limit and limit not in message:
            message = f"{message} ({limit})"
        super().__init__(message)
        self.message = message
        # The OS errno behind the failure, when there is one; it travels with the reason.
        self.errno = errno
        # The configuration key whose bound the request crossed (e.g. `limits.max_threads`),
        # so a client can tell which limit answered without parsing the message.
        self.limit = limit


# --- one class per status code: what an unknown reason degrades to ----------------------


class InvalidArgumentError(ServiceError):
    """A request field is malformed or out of its limit (the message names the field)."""

    code = "INVALID_ARGUMENT"
    reason = "invalid_argument"


class UnauthenticatedError(ServiceError):
    """No, bad or expired credentials."""

    code = "UNAUTHENTICATED"
    reason = "unauthenticated"


class PermissionDeniedError(ServiceError):
    """The caller may not do this."""

    code = "PERMISSION_DENIED"
    reason = "permission_denied"


class NotFoundError(ServiceError):
    """The request names something that does not exist (for this caller)."""

    code = "NOT_FOUND"
    reason = "not_found"


class FailedPreconditionError(ServiceError):
    """The request cannot be honoured in the current state."""

    code = "FAILED_PRECONDITION"
    reason = "failed_precondition"


class ResourceExhaustedError(ServiceError):
    """A limit was hit; retry later."""

    code = "RESOURCE_EXHAUSTED"
    reason = "resource_exhausted"


class UnavailableError(ServiceError):
    """The server is draining or something it needs is unreachable."""

    code = "UNAVAILABLE"
    reason = "unavailable"


# --- PERMISSION_DENIED -------------------------------------------------------------------


class PathNotAllowedError(PermissionDeniedError):
    """A file operation outside the writable roots of the requested sandbox."""

    reason = "path_not_writable"


class EnvironmentNotAllowedError(PermissionDeniedError):
    """The caller may not use this environment."""

    reason = "environment_not_allowed"


class OperatorRouteError(PermissionDeniedError):
    """The approval is operator-routed: only an operator decides it (ApprovalService)."""

    reason = "operator_route"


class SelfApprovalError(PermissionDeniedError):
    """An operator may not decide a call it made itself."""

    reason = "self_approval"


class NotOperatorError(PermissionDeniedError):
    """The subject lacks the operator role (token-file `roles=operator` or operator_subjects)."""

    reason = "not_operator"


class NotTheCallerError(PermissionDeniedError):
    """A live caller approval is answered by the call's own subject only."""

    reason = "not_the_caller"


# --- NOT_FOUND ---------------------------------------------------------------------------


class ProcessNotFoundError(NotFoundError):
    """Unknown process id for this caller (other callers' processes look unknown too)."""

    reason = "unknown_process"


class FileNotFoundExecError(NotFoundError):
    """A file operation named a path that does not exist."""

    reason = "no_such_file"


class UnknownThreadError(NotFoundError):
    """No such thread."""

    reason = "unknown_thread"


class UnknownApprovalError(NotFoundError):
    """No pending approval with that id (never existed, expired, or already answered)."""

    reason = "unknown_approval"


class AlreadyDecidedError(NotFoundError):
    """An operator approval another decision (or the deadline) already settled: only one wins."""

    reason = "already_decided"


class UnknownSessionError(NotFoundError):
    """No unified-exec session with that id in the thread."""

    reason = "unknown_session"


class UnknownCallError(NotFoundError):
    """No in-flight call with that id in the thread."""

    reason = "unknown_call"


class EnvironmentNotFoundError(NotFoundError):
    """No configured environment with that id."""

    reason = "unknown_environment"


# --- FAILED_PRECONDITION -----------------------------------------------------------------


class UnsupportedShellModeError(FailedPreconditionError):
    """The daemon runs argv directly (Direct mode) and refuses anything else."""

    reason = "unsupported_shell_mode"


class ShellMismatchError(FailedPreconditionError):
    """The request names a shell type different from the daemon's native one."""

    reason = "shell_mismatch"


class SandboxUnavailableError(FailedPreconditionError):
    """A sandbox was requested but this host cannot apply it; nothing runs unsandboxed."""

    reason = "sandbox_unavailable"


class ProcessExitedError(FailedPreconditionError):
    """Signal, write or resize sent to a process that already finished."""

    reason = "process_exited"


class StdinClosedError(FailedPreconditionError):
    """Write to a process whose stdin is not open (pipes without stdin, or after EOF)."""

    reason = "stdin_closed"


class NotATtyError(FailedPreconditionError):
    """Resize of a process that has no PTY."""

    reason = "not_a_tty"


class HostKeyMismatchError(FailedPreconditionError):
    """The SSH host key does not match the pinned key."""

    reason = "host_key_mismatch"


class SpawnError(FailedPreconditionError):
    """The process could not be started (missing program or cwd, permission)."""

    reason = "spawn_failed"


class FileOperationError(FailedPreconditionError):
    """A file operation failed for a reason other than a missing path."""

    reason = "file_operation_failed"


class ParkedCallChangedError(FailedPreconditionError):
    """A resumed parked call no longer projects to what was approved: nothing ran, it is gone."""

    reason = "parked_call_changed"


class CallIdConflictError(FailedPreconditionError):
    """The thread already has a call with this call_id, from a different item: nothing ran."""

    reason = "call_id_conflict"


class CallAwaitingApprovalError(FailedPreconditionError):
    """A retried call is parked for approval: resume it (the message names the approval id)."""

    reason = "call_awaiting_approval"


class ApprovalExpiredError(FailedPreconditionError):
    """An operator approval past its deadline: the caller already got the deadline fallback."""

    reason = "approval_expired"


# --- RESOURCE_EXHAUSTED ------------------------------------------------------------------


class LimitExceededError(ResourceExhaustedError):
    """A concurrency cap or quota was reached."""

    reason = "limit_exceeded"


# --- UNAVAILABLE -------------------------------------------------------------------------


class EnvironmentLostError(UnavailableError):
    """The environment (SSH connection) is unreachable."""

    reason = "environment_lost"


class DrainingError(UnavailableError):
    """The daemon is shutting down and accepts no new work."""

    reason = "draining"


class SharedStateUnavailableError(UnavailableError):
    """The shared store cannot be reached; nothing is assumed (an approval is never granted)."""

    reason = "shared_state_unavailable"


class CallRunningElsewhereError(UnavailableError):
    """A retried call still runs on another router replica: retry later for its result."""

    reason = "call_running_elsewhere"


def all_error_classes() -> list[type[ServiceError]]:
    """Every domain error class, the base first (the table tests and the decoder walk)."""
    found: list[type[ServiceError]] = []
    pending: list[type[ServiceError]] = [ServiceError]
    while pending:
        cls = pending.pop(0)
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return found
