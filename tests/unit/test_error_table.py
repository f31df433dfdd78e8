"""The error table: its drawn tree, unique reasons, and how unknown statuses degrade by code."""

from __future__ import annotations

import re

import grpc
import grpc.aio
import pytest
import shellgate.common.errors as errors_module
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status
from shellgate.client.errors import ERROR_DOMAIN, from_rpc_error
from shellgate.common.errors import (
    FailedPreconditionError,
    NotFoundError,
    ServiceError,
    UnavailableError,
    UnknownThreadError,
    all_error_classes,
)
from shellgate.common.grpc.status import DOMAIN, error_from_status, status_for

_ROW = re.compile(
    r"^    (?P<tree>[ │├└─]*)(?P<name>\w+Error)\s+(?:(?P<code>[A-Z_]+)\s+)?"
    r"(?P<reason>[a-z_]+)(?: \(errno\))?$"
)


def _drawn_tree() -> dict[str, tuple[str | None, str | None, str]]:
    """name → (parent, code, reason) as the errors module's docstring draws them."""
    rows: dict[str, tuple[str | None, str | None, str]] = {}
    stack: list[str] = []
    for line in (errors_module.__doc__ or "").splitlines():
        found = _ROW.match(line)
        if found is None:
            continue
        depth = len(found["tree"]) // 4
        del stack[depth:]
        rows[found["name"]] = (stack[-1] if stack else None, found["code"], found["reason"])
        stack.append(found["name"])
    return rows


def test_the_drawn_tree_is_the_class_tree() -> None:
    drawn = _drawn_tree()
    classes = all_error_classes()
    assert sorted(drawn) == sorted(cls.__name__ for cls in classes)
    for cls in classes:
        parent, code, reason = drawn[cls.__name__]
        expected_parent = None if cls is ServiceError else cls.__base__.__name__
        assert parent == expected_parent, cls
        assert reason == cls.reason, cls
        # The code is drawn once, on the class of that code; rows below inherit it.
        assert code == (cls.code if parent in (None, "ServiceError") else None), cls


def test_one_class_per_code_and_every_reason_once() -> None:
    per_code = [ServiceError, *ServiceError.__subclasses__()]
    assert len({cls.code for cls in per_code}) == len(per_code)
    for cls in all_error_classes():
        assert cls.code in grpc.StatusCode.__members__ and cls.code != "OK", cls
        assert re.fullmatch(r"[a-z][a-z_]*", cls.reason), cls
        assert cls.__doc__ and "\n" not in cls.__doc__.strip(), cls
    reasons = [cls.reason for cls in all_error_classes()]
    assert len(reasons) == len(set(reasons))
    # The client cannot import the table; its copy of the domain must agree.
    assert ERROR_DOMAIN == DOMAIN


def _failed_call(
    code: grpc.StatusCode, details: str, status: status_pb2.Status | None = None
) -> grpc.aio.AioRpcError:
    """The error a grpc.aio call raises for this status (the real class, built by hand)."""
    trailers = rpc_status.to_status(status).trailing_metadata if status is not None else ()
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(*trailers), details)


def _status(
    code: grpc.StatusCode, message: str, reason: str, domain: str = DOMAIN, **metadata: str
) -> status_pb2.Status:
    status = status_pb2.Status(code=code.value[0], message=message)
    info = error_details_pb2.ErrorInfo(reason=reason, domain=domain, metadata=metadata)
    status.details.add().Pack(info)
    return status


def test_a_status_for_rebuilds_its_error() -> None:
    sent = UnknownThreadError("unknown thread t-1", 2)
    status = status_for(sent)
    assert status.code == grpc.StatusCode.NOT_FOUND and status.details == "unknown thread t-1"
    back = error_from_status(
        grpc.aio.AioRpcError(
            status.code, grpc.aio.Metadata(), grpc.aio.Metadata(*status.trailing_metadata),
            status.details,
        )
    )  # fmt: skip
    assert type(back) is UnknownThreadError and (back.message, back.errno) == (sent.message, 2)


NOT_FOUND = grpc.StatusCode.NOT_FOUND


@pytest.mark.parametrize(
    ("call", "expected", "errno"),
    [
        # A reason from a newer peer: the class of its code, message and errno kept.
        (_failed_call(NOT_FOUND, "m", _status(NOT_FOUND, "m", "from_the_future", errno="5")),
         NotFoundError, 5),
        # A known reason under another code is not trusted over the code.
        (_failed_call(grpc.StatusCode.FAILED_PRECONDITION, "m",
                      _status(grpc.StatusCode.FAILED_PRECONDITION, "m", "unknown_thread")),
         FailedPreconditionError, None),
        # Another domain's ErrorInfo is not ours.
        (_failed_call(NOT_FOUND, "m", _status(NOT_FOUND, "m", "unknown_thread", "example.com")),
         NotFoundError, None),
        # No detail at all (a peer without reasons, or grpc itself).
        (_failed_call(grpc.StatusCode.UNAVAILABLE, "m"), UnavailableError, None),
        (_failed_call(grpc.StatusCode.INTERNAL, "m"), ServiceError, None),
        # A detail whose message disagrees with the call's is ignored.
        (_failed_call(NOT_FOUND, "m", _status(NOT_FOUND, "other", "unknown_thread")),
         NotFoundError, None),
        # A known reason with an errno that is not a number keeps the class, drops the errno.
        (_failed_call(NOT_FOUND, "m", _status(NOT_FOUND, "m", "unknown_thread", errno="x")),
         UnknownThreadError, None),
    ],
    ids=["unknown-reason", "code-mismatch", "foreign-domain", "no-detail", "internal",
         "message-mismatch", "bad-errno"],
)  # fmt: skip
def test_unknown_reasons_degrade_by_code(
    call: grpc.aio.AioRpcError, expected: type[ServiceError], errno: int | None
) -> None:
    error = error_from_status(call)
    assert type(error) is expected
    assert (error.message, error.reason, error.errno) == ("m", expected.reason, errno)


def test_codes_outside_the_table_are_not_domain_errors() -> None:
    for code in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED,
                 grpc.StatusCode.UNKNOWN, grpc.StatusCode.UNIMPLEMENTED):  # fmt: skip
        assert error_from_status(_failed_call(code, "m")) is None


def test_the_client_keeps_a_reason_it_does_not_know() -> None:
    call = _failed_call(NOT_FOUND, "m", _status(NOT_FOUND, "m", "from_the_future", errno="5"))
    error = from_rpc_error(call)
    assert (error.code, error.details, error.reason, error.errno) == (
        NOT_FOUND, "m", "from_the_future", 5)  # fmt: skip
    bare = from_rpc_error(_failed_call(NOT_FOUND, "m"))
    assert (bare.reason, bare.errno, bare.metadata) == ("", None, {})
    odd = from_rpc_error(_failed_call(NOT_FOUND, "m", _status(NOT_FOUND, "m", "r", errno="x")))
    assert (odd.reason, odd.errno) == ("r", None)
