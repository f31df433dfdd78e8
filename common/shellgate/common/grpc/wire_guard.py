"""A server interceptor that turns undecodable request bytes into INVALID_ARGUMENT.

Installed on every listener of both daemons (the exec-server and the router).

grpcio runs a method's request deserializer before any handler code, and a protobuf
`DecodeError` there surfaces as UNKNOWN carrying the exception text. This interceptor moves
deserialization inside the handler so bytes that are not the method's request message (or
carry invalid UTF-8 in a string field) get INVALID_ARGUMENT with a fixed text instead.
Seeing every call first, it also has the memory of huge requests released once their call
ends (memory_release.py) and refuses calls past `connections.max_calls_per_peer`
(connections.py).
"""

from __future__ import annotations

import inspect
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import grpc.aio
from shellgate.common.errors import InvalidArgumentError, LimitExceededError
from shellgate.common.grpc.connections import PeerCalls, peer_address
from shellgate.common.grpc.status import status_for
from shellgate.common.memory_release import MemoryRelease

Deserializer = Callable[[bytes], Any]
UNCOUNTED_METHODS = frozenset({"/grpc.health.v1.Health/Check"})


async def _decode(
    raw: bytes, deserialize: Deserializer, context: Any, method: str, release: MemoryRelease
) -> Any:
    if release.is_huge(len(raw)):
        context.add_done_callback(lambda _call: release.call_ended())
    try:
        return deserialize(raw)
    except Exception:
        # Never echo the parser's text: it may quote caller bytes. The status carries the
        # same ErrorInfo reason as any other INVALID_ARGUMENT.
        status = status_for(InvalidArgumentError(f"request is not a valid message for {method}"))
        await context.abort(status.code, status.details, status.trailing_metadata)


def _clear_frames(exc: BaseException) -> None:
    """Drop the locals of every (finished) frame of `exc` and the exceptions chained to it."""
    seen: set[int] = set()
    pending: list[BaseException | None] = [exc]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        traceback.clear_frames(current.__traceback__)
        pending += [current.__context__, current.__cause__]


def _forget_on_done(exc: BaseException, context: Any) -> None:
    # grpc.aio keeps the exception that ended a call on the call's state, and the last
    # call of each method stays referenced until that method's next call arrives: its
    # frames would keep the request (tens of MiB for a rejected huge one) alive meanwhile.
    # Once the call is done no frame of it runs any more, so their locals can go.
    context.add_done_callback(lambda _call: _clear_frames(exc))


async def _admit(peer_calls: PeerCalls | None, context: Any) -> str | None:
    """Count the call against its peer (None: not counted); past the cap, abort."""
    if peer_calls is None:
        return None
    address = peer_address(context.peer())
    if peer_calls.enter(address):
        return address
    error = LimitExceededError(
        f"this peer already has {peer_calls.limit} calls in flight; retry when some end",
        limit="connections.max_calls_per_peer",
    )
    status = status_for(error)
    await context.abort(status.code, status.details, status.trailing_metadata)
    return None  # unreachable: abort raises


def _enveloped_coroutine(
    fn: Callable[[Any, Any], Awaitable[Any]], peer_calls: PeerCalls | None
) -> Any:
    async def handler(request: Any, context: Any) -> Any:
        address = await _admit(peer_calls, context)
        try:
            return await fn(request, context)
        except BaseException as exc:
            _forget_on_done(exc, context)
            raise
        finally:
            if address is not None and peer_calls is not None:
                peer_calls.leave(address)

    return handler


def _enveloped_generator(
    fn: Callable[[Any, Any], AsyncIterator[Any]], peer_calls: PeerCalls | None
) -> Any:
    async def handler(request: Any, context: Any) -> AsyncIterator[Any]:
        address = await _admit(peer_calls, context)
        try:
            async for item in fn(request, context):
                yield item
        except BaseException as exc:
            _forget_on_done(exc, context)
            raise
        finally:
            if address is not None and peer_calls is not None:
                peer_calls.leave(address)

    return handler


async def _stream_via_write(result: Any, context: Any) -> Any:
    """Run a streaming handler that is not an async generator function.

    Such a handler either writes through `context.write` and returns nothing (a coroutine),
    or returns an async iterator; both are served the way grpc.aio serves them unwrapped.
    """
    if inspect.isawaitable(result):
        result = await result
    if result is not None and hasattr(result, "__aiter__"):
        async for item in result:
            await context.write(item)
        return None
    return result


def _guard(
    handler: Any, method: str, release: MemoryRelease, peer_calls: PeerCalls | None
) -> Any:
    deserialize: Deserializer | None = handler.request_deserializer
    if deserialize is None:
        return handler
    assert deserialize is not None

    async def requests(raw_iter: AsyncIterator[bytes], context: Any) -> AsyncIterator[Any]:
        async for raw in raw_iter:
            yield await _decode(raw, deserialize, context, method, release)

    if handler.unary_unary is not None:
        inner_uu = handler.unary_unary

        async def unary_unary(raw: bytes, context: Any) -> Any:
            return await inner_uu(
                await _decode(raw, deserialize, context, method, release), context
            )

        return handler._replace(
            request_deserializer=None, unary_unary=_enveloped_coroutine(unary_unary, peer_calls)
        )
    if handler.unary_stream is not None:
        inner_us = handler.unary_stream
        if inspect.isasyncgenfunction(inner_us):

            async def unary_stream(raw: bytes, context: Any) -> AsyncIterator[Any]:
                request = await _decode(raw, deserialize, context, method, release)
                async for item in inner_us(request, context):
                    yield item

            return handler._replace(
                request_deserializer=None, unary_stream=_enveloped_generator(unary_stream, peer_calls)
            )

        # A coroutine handler that streams through context.write (grpc's Health.Watch).
        async def unary_stream_writer(raw: bytes, context: Any) -> Any:
            return await _stream_via_write(
                inner_us(await _decode(raw, deserialize, context, method, release), context),
                context,
            )

        return handler._replace(
            request_deserializer=None, unary_stream=_enveloped_coroutine(unary_stream_writer, peer_calls)
        )
    if handler.stream_unary is not None:
        inner_su = handler.stream_unary

        async def stream_unary(raw_iter: AsyncIterator[bytes], context: Any) -> Any:
            return await inner_su(requests(raw_iter, context), context)

        return handler._replace(
            request_deserializer=None, stream_unary=_enveloped_coroutine(stream_unary, peer_calls)
        )
    inner_ss = handler.stream_stream
    if inspect.isasyncgenfunction(inner_ss):

        async def stream_stream(raw_iter: AsyncIterator[bytes], context: Any) -> AsyncIterator[Any]:
            async for item in inner_ss(requests(raw_iter, context), context):
                yield item

        return handler._replace(
            request_deserializer=None, stream_stream=_enveloped_generator(stream_stream, peer_calls)
        )

    async def stream_stream_writer(raw_iter: AsyncIterator[bytes], context: Any) -> Any:
        return await _stream_via_write(inner_ss(requests(raw_iter, context), context), context)

    return handler._replace(
        request_deserializer=None, stream_stream=_enveloped_coroutine(stream_stream_writer, peer_calls)
    )


class DecodeGuardInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[type-arg]
    """Deserialize requests inside the handler so bad bytes get INVALID_ARGUMENT."""

    # Known methods only (unknown ones never get here), so this stays small; the bound is
    # a backstop.
    _CACHE_MAX = 512

    def __init__(
        self, release: MemoryRelease | None = None, peer_calls: PeerCalls | None = None
    ) -> None:
        self.release = release if release is not None else MemoryRelease()
        # Calls in flight per peer (connections.max_calls_per_peer); None counts nothing.
        self.peer_calls = peer_calls
        # method -> (the server's handler, its guarded twin): the server hands out the same
        # handler object on every call, so the wrapping is built once per method, not per call.
        self._guarded: dict[str, tuple[Any, Any]] = {}

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Any]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Any:
        """Wrap the method's handler (unknown methods pass through as UNIMPLEMENTED)."""
        handler = await continuation(handler_call_details)
        if handler is None:
            return None
        method = str(handler_call_details.method)
        known = self._guarded.get(method)
        if known is not None and known[0] is handler:
            return known[1]
        # Health Check is never refused: probes must answer whatever one peer holds.
        counted = None if method in UNCOUNTED_METHODS else self.peer_calls
        guarded = _guard(handler, method, self.release, counted)
        if len(self._guarded) >= self._CACHE_MAX:
            self._guarded.clear()
        self._guarded[method] = (handler, guarded)
        return guarded
