"""Router domain errors that become RPC statuses; model-level failures are tool outputs.

They share the exec-server's base class so one boundary (`shellgate.common.boundary`)
maps every domain error of both daemons to its status code.
"""

from __future__ import annotations

from shellgate.common.errors import ExecServerError as ServiceError

__all__ = [
    "FailedPrecondition",
    "InvalidArgument",
    "NotFound",
    "PermissionDenied",
    "ResourceExhausted",
    "ServiceError",
    "Unauthenticated",
    "Unavailable",
]


class InvalidArgument(ServiceError):
    """A malformed or out-of-limit request field (the message names it)."""

    code = "INVALID_ARGUMENT"
    reason = "invalid_argument"


class NotFound(ServiceError):
    """Unknown thread, session, approval, call or environment."""

    code = "NOT_FOUND"
    reason = "not_found"


class PermissionDenied(ServiceError):
    """The caller may not use this environment."""

    code = "PERMISSION_DENIED"
    reason = "permission_denied"


class Unauthenticated(ServiceError):
    """No or bad credentials."""

    code = "UNAUTHENTICATED"
    reason = "unauthenticated"


class ResourceExhausted(ServiceError):
    """A concurrency cap or quota was hit; retry later."""

    code = "RESOURCE_EXHAUSTED"
    reason = "resource_exhausted"


class FailedPrecondition(ServiceError):
    """The request cannot be honoured in the current state."""

    code = "FAILED_PRECONDITION"
    reason = "failed_precondition"


class Unavailable(ServiceError):
    """The server is draining or an environment is unreachable."""

    code = "UNAVAILABLE"
    reason = "unavailable"
