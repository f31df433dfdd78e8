"""Runtime errors that become RPC statuses (model-level failures are tool outputs instead)."""

from __future__ import annotations

from shellgate.router.errors import ServiceError

__all__ = [
    "EnvironmentNotFoundError",
    "InvalidRuntimeArgumentError",
    "RuntimeServiceError",
    "UnknownApprovalError",
    "UnknownCallError",
    "UnknownSessionError",
    "UnknownThreadError",
]


class RuntimeServiceError(ServiceError):
    """Base of runtime errors; `code` is the gRPC status name, `reason` a stable tag."""


class InvalidRuntimeArgumentError(RuntimeServiceError):
    """A request field is malformed (the message names the field)."""

    code = "INVALID_ARGUMENT"
    reason = "invalid_argument"


class UnknownThreadError(RuntimeServiceError):
    """No such thread."""

    code = "NOT_FOUND"
    reason = "unknown_thread"


class UnknownApprovalError(RuntimeServiceError):
    """No pending approval with that id (never existed, expired, or already answered)."""

    code = "NOT_FOUND"
    reason = "unknown_approval"


class UnknownSessionError(RuntimeServiceError):
    """No unified-exec session with that id in the thread."""

    code = "NOT_FOUND"
    reason = "unknown_session"


class UnknownCallError(RuntimeServiceError):
    """No in-flight call with that id in the thread."""

    code = "NOT_FOUND"
    reason = "unknown_call"


class EnvironmentNotFoundError(RuntimeServiceError):
    """No configured environment with that id."""

    code = "NOT_FOUND"
    reason = "unknown_environment"
