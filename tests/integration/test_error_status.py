"""Every domain error keeps its identity across a real gRPC hop (boundary → status → class)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator

import grpc
import grpc.aio
import pytest
from shellgate.client import errors as client_errors
from shellgate.client.errors import ClientError, from_rpc_error
from shellgate.common.boundary import streaming, unary
from shellgate.common.errors import ServiceError, all_error_classes
from shellgate.common.grpc.status import error_from_status, error_info

SERVICE = "shellgate.test.Errors"
CLASSES = {cls.__name__: cls for cls in all_error_classes()}
SECRET = "secret-exception-text-7f3a"
# The Python client's class for each code the table uses (INTERNAL has no class of its own).
CLIENT_CLASSES: dict[str, type[ClientError]] = {
    "INTERNAL": ClientError,
    "INVALID_ARGUMENT": client_errors.InvalidArgumentError,
    "UNAUTHENTICATED": client_errors.UnauthenticatedError,
    "PERMISSION_DENIED": client_errors.PermissionDeniedError,
    "NOT_FOUND": client_errors.NotFoundError,
    "FAILED_PRECONDITION": client_errors.FailedPreconditionError,
    "RESOURCE_EXHAUSTED": client_errors.ResourceExhaustedError,
    "UNAVAILABLE": client_errors.UnavailableError,
}


def _message(cls: type[ServiceError]) -> str:
    # Non-ASCII and punctuation: the status message must come back byte for byte.
    return f"{cls.__name__} failed: naïve “quotes” (os error 13) ✓"


def _raise(request: bytes) -> None:
    """Raise what the request names: `ClassName errno` (errno may be empty), or `boom`."""
    name, _, errno = request.decode().partition(" ")
    if name == "boom":
        raise RuntimeError(SECRET)
    cls = CLASSES[name]
    raise cls(_message(cls), int(errno) if errno else None)


class _Raiser:
    """A tiny servicer whose handlers raise the error the request names, behind the boundary."""

    @unary
    async def Raise(self, request: bytes, context: object) -> bytes:
        _raise(request)
        return b""

    @streaming
    async def RaiseLater(self, request: bytes, context: object) -> AsyncIterator[bytes]:
        # One message first: the error then travels in the trailers of a started stream.
        yield b"first"
        _raise(request)


async def _server() -> tuple[grpc.aio.Server, str]:
    raiser = _Raiser()
    handler = grpc.method_handlers_generic_handler(
        SERVICE,
        {
            "Raise": grpc.unary_unary_rpc_method_handler(raiser.Raise),
            "RaiseLater": grpc.unary_stream_rpc_method_handler(raiser.RaiseLater),
        },
    )
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, f"127.0.0.1:{port}"


async def _unary_error(channel: grpc.aio.Channel, payload: bytes) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await channel.unary_unary(f"/{SERVICE}/Raise")(payload, timeout=10)
    return err.value


async def _stream_error(channel: grpc.aio.Channel, payload: bytes) -> grpc.aio.AioRpcError:
    received = []
    with pytest.raises(grpc.aio.AioRpcError) as err:
        async for message in channel.unary_stream(f"/{SERVICE}/RaiseLater")(payload, timeout=10):
            received.append(message)
    assert received == [b"first"]
    return err.value


def _sync_error(target: str, payload: bytes) -> grpc.RpcError:
    """The blocking client's path: a sync channel's RpcError (run in a worker thread)."""
    with grpc.insecure_channel(target) as channel:
        try:
            channel.unary_unary(f"/{SERVICE}/Raise")(payload, timeout=10)
        except grpc.RpcError as error:
            return error
    raise AssertionError("the call did not fail")


def test_every_error_class_round_trips_through_a_real_server() -> None:
    async def main() -> None:
        server, target = await _server()
        try:
            async with grpc.aio.insecure_channel(target) as channel:
                for cls in all_error_classes():
                    for errno in (None, 13):
                        payload = f"{cls.__name__} {errno or ''}".encode()
                        for rpc_error in (
                            await _unary_error(channel, payload),
                            await _stream_error(channel, payload),
                        ):
                            _check(cls, errno, rpc_error)
                        sync_error = await asyncio.to_thread(_sync_error, target, payload)
                        _check_client(cls, errno, sync_error)
        finally:
            await server.stop(None)

    asyncio.run(main())


def _check(cls: type[ServiceError], errno: int | None, rpc_error: grpc.aio.AioRpcError) -> None:
    where = f"{cls.__name__} errno={errno}"
    # What callers saw before reasons existed is unchanged: the code and the message.
    assert rpc_error.code() == grpc.StatusCode[cls.code], where
    assert rpc_error.details() == _message(cls), where
    rebuilt = error_from_status(rpc_error)
    assert type(rebuilt) is cls, where
    assert rebuilt.message == _message(cls) and rebuilt.reason == cls.reason, where
    assert rebuilt.errno == errno, where
    _check_client(cls, errno, rpc_error)


def _check_client(cls: type[ServiceError], errno: int | None, rpc_error: grpc.RpcError) -> None:
    where = f"{cls.__name__} errno={errno} ({type(rpc_error).__name__})"
    client_error = from_rpc_error(rpc_error)
    assert type(client_error) is CLIENT_CLASSES[cls.code], where
    assert client_error.code == grpc.StatusCode[cls.code], where
    assert client_error.details == _message(cls), where
    assert client_error.reason == cls.reason, where
    assert client_error.errno == errno, where
    assert client_error.metadata == ({} if errno is None else {"errno": str(errno)}), where


def test_unexpected_exceptions_stay_internal_with_an_incident_id_only() -> None:
    async def main() -> None:
        server, target = await _server()
        try:
            async with grpc.aio.insecure_channel(target) as channel:
                for rpc_error in (
                    await _unary_error(channel, b"boom"),
                    await _stream_error(channel, b"boom"),
                ):
                    assert rpc_error.code() == grpc.StatusCode.INTERNAL
                    details = rpc_error.details() or ""
                    assert re.fullmatch(r"internal error \(incident [0-9a-f]{12}\)", details)
                    # No status detail at all: nothing of the exception can leak through it.
                    assert error_info(rpc_error) is None
                    trailers = b"".join(
                        v if isinstance(v, bytes) else v.encode()
                        for _, v in rpc_error.trailing_metadata()
                    )
                    assert SECRET.encode() not in trailers
                    rebuilt = error_from_status(rpc_error)
                    assert type(rebuilt) is ServiceError and rebuilt.message == details
                    assert from_rpc_error(rpc_error).reason == ""
        finally:
            await server.stop(None)

    asyncio.run(main())
