"""Domain errors ↔ gRPC statuses: the reason (and errno) travel as a `google.rpc.ErrorInfo`.

`status_for` is what the boundary sends; `error_from_status` is its inverse on the calling
side (asyncssh's `construct_disc_error`, Temporal's `from_failure`): the class comes from the
reason, never from the message text.
"""

from __future__ import annotations

from typing import cast

import grpc
from google.protobuf.message import DecodeError
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status
from shellgate.common.errors import ServiceError, all_error_classes

__all__ = ["DOMAIN", "ERRNO_KEY", "LIMIT_KEY", "error_from_status", "error_info", "status_for"]

# ErrorInfo.domain of every shellgate error; details from other domains are not ours.
DOMAIN = "shellgate"
ERRNO_KEY = "errno"
# ErrorInfo.metadata key naming the configuration key of the limit a request crossed.
LIMIT_KEY = "limit"

_BY_REASON: dict[str, type[ServiceError]] = {cls.reason: cls for cls in all_error_classes()}
# The base and its direct subclasses are one class per status code (see the errors module).
_PER_CODE: list[type[ServiceError]] = [ServiceError, *ServiceError.__subclasses__()]
_BY_CODE: dict[str, type[ServiceError]] = {cls.code: cls for cls in _PER_CODE}


def status_for(error: ServiceError) -> grpc.Status:
    """The status a domain error is sent as: its code, its message and an ErrorInfo detail."""
    info = error_details_pb2.ErrorInfo(reason=error.reason, domain=DOMAIN)
    if error.errno is not None:
        info.metadata[ERRNO_KEY] = str(error.errno)
    if error.limit:
        info.metadata[LIMIT_KEY] = error.limit
    status = status_pb2.Status(code=grpc.StatusCode[error.code].value[0], message=error.message)
    status.details.add().Pack(info)
    return rpc_status.to_status(status)


def error_info(rpc_error: grpc.RpcError) -> error_details_pb2.ErrorInfo | None:
    """The shellgate ErrorInfo a failed call carries; None when it has none (or a broken one)."""
    try:
        # from_call reads only code(), details() and trailing_metadata(), which a sync
        # RpcError and an AioRpcError both have.
        status = rpc_status.from_call(cast(grpc.Call, rpc_error))
    except (ValueError, DecodeError):
        # The status proto disagrees with the call's code or message, or is not a Status.
        return None
    if status is None:
        return None
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Is(info.DESCRIPTOR) and detail.Unpack(info) and info.domain == DOMAIN:
            return info
    return None


def _errno(info: error_details_pb2.ErrorInfo | None) -> int | None:
    if info is None or ERRNO_KEY not in info.metadata:
        return None
    try:
        return int(info.metadata[ERRNO_KEY])
    except ValueError:
        return None


def error_from_status(rpc_error: grpc.RpcError) -> ServiceError | None:
    """The domain error a failed call carries: class by reason, else the class of its code.

    The message, errno and limit come back as sent. A reason this table does not know (a newer
    peer), or one whose class has another code, degrades to the class of the status code.
    None when the code is not one the table uses (CANCELLED, DEADLINE_EXCEEDED, UNKNOWN, …):
    the call failed in transport or in the caller, not in the server's domain.
    """
    info = error_info(rpc_error)
    cls = _BY_REASON.get(info.reason) if info is not None else None
    if cls is None or cls.code != rpc_error.code().name:
        cls = _BY_CODE.get(rpc_error.code().name)
    if cls is None:
        return None
    limit = info.metadata.get(LIMIT_KEY, "") if info is not None else ""
    return cls(rpc_error.details() or "", _errno(info), limit=limit)
