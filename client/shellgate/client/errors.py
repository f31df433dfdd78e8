"""Client-side errors: one class per gRPC status code the router documents.

Each also carries the router's stable `reason` (e.g. `unknown_session` vs `unknown_thread`,
both NOT_FOUND) and its metadata (`errno` when an OS error is behind it), read from the
`google.rpc.ErrorInfo` detail of the status, so a harness never parses the message text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

import grpc
from google.protobuf.message import DecodeError
from google.rpc import error_details_pb2
from grpc_status import rpc_status

__all__ = [
    "ERROR_DOMAIN",
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

# ErrorInfo.domain of the router's (and exec-server's) errors.
ERROR_DOMAIN = "shellgate"


class ClientError(Exception):
    """An RPC failed: `code`, the server's message `details`, its stable `reason` and metadata.

    `reason` is "" (and `metadata` empty) when the status carries no shellgate ErrorInfo:
    a transport failure, a deadline, or a server that predates reasons.
    """

    def __init__(
        self,
        code: grpc.StatusCode,
        details: str,
        reason: str = "",
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(f"{code.name}: {details}")
        self.code = code
        self.details = details
        self.reason = reason
        self.metadata: dict[str, str] = dict(metadata or {})

    @property
    def errno(self) -> int | None:
        """The OS errno behind the failure, when the server sent one."""
        try:
            return int(self.metadata["errno"])
        except (KeyError, ValueError):
            return None


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


def _error_info(error: grpc.RpcError) -> error_details_pb2.ErrorInfo | None:
    if not callable(getattr(error, "trailing_metadata", None)):
        return None
    try:
        # Reads code(), details() and trailing_metadata(): sync and aio errors have all three.
        status = rpc_status.from_call(cast(grpc.Call, error))
    except (ValueError, DecodeError):
        # The status detail disagrees with the call's code or message, or is not a Status.
        return None
    for detail in status.details if status is not None else ():
        info = error_details_pb2.ErrorInfo()
        if detail.Is(info.DESCRIPTOR) and detail.Unpack(info) and info.domain == ERROR_DOMAIN:
            return info
    return None


def from_rpc_error(error: grpc.RpcError) -> ClientError:
    """The ClientError subclass for a grpc (sync or aio) RpcError, with its reason."""
    code_fn = getattr(error, "code", None)
    details_fn = getattr(error, "details", None)
    code = code_fn() if callable(code_fn) else grpc.StatusCode.UNKNOWN
    details = details_fn() if callable(details_fn) else str(error)
    if not isinstance(code, grpc.StatusCode):
        code = grpc.StatusCode.UNKNOWN
    cls = _BY_CODE.get(code, ClientError)
    info = _error_info(error)
    if info is None:
        return cls(code, details or "")
    return cls(code, details or "", info.reason, info.metadata)
