"""Client-side errors: one class per gRPC status code the router documents."""

from __future__ import annotations

import grpc

__all__ = [
    "ClientError",
    "DeadlineExceededError",
    "FailedPreconditionError",
    "InvalidArgumentError",
    "NotFoundError",
    "PermissionDeniedError",
    "ResourceExhaustedError",
    "UnauthenticatedError",
    "UnavailableError",
    "from_rpc_error",
]


class ClientError(Exception):
    """An RPC failed; `code` is the gRPC status code, `details` the server's message."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(f"{code.name}: {details}")
        self.code = code
        self.details = details


class InvalidArgumentError(ClientError):
    """A request field was malformed or out of limits (the message names the field)."""


class UnauthenticatedError(ClientError):
    """Missing or bad credentials."""


class PermissionDeniedError(ClientError):
    """The caller may not use that environment."""


class NotFoundError(ClientError):
    """Unknown thread, session, call, environment or approval id."""


class FailedPreconditionError(ClientError):
    """The server cannot honour the request in its current state."""


class ResourceExhaustedError(ClientError):
    """A limit was hit."""


class UnavailableError(ClientError):
    """The router (or an environment) could not be reached."""


class DeadlineExceededError(ClientError):
    """The call's deadline passed (DEADLINE_EXCEEDED)."""


_BY_CODE: dict[grpc.StatusCode, type[ClientError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgumentError,
    grpc.StatusCode.UNAUTHENTICATED: UnauthenticatedError,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDeniedError,
    grpc.StatusCode.NOT_FOUND: NotFoundError,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPreconditionError,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhaustedError,
    grpc.StatusCode.UNAVAILABLE: UnavailableError,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceededError,
}


def from_rpc_error(error: grpc.RpcError) -> ClientError:
    """The ClientError subclass for a grpc (sync or aio) RpcError."""
    code_fn = getattr(error, "code", None)
    details_fn = getattr(error, "details", None)
    code = code_fn() if callable(code_fn) else grpc.StatusCode.UNKNOWN
    details = details_fn() if callable(details_fn) else str(error)
    if not isinstance(code, grpc.StatusCode):
        code = grpc.StatusCode.UNKNOWN
    cls = _BY_CODE.get(code, ClientError)
    return cls(code, details or "")
