"""A server interceptor that turns undecodable request bytes into INVALID_ARGUMENT.

Installed on every listener of both daemons (the exec-server and the router).

grpcio runs a method's request deserializer before any handler code, and a protobuf
`DecodeError` there surfaces as UNKNOWN carrying the exception text. This interceptor moves
deserialization inside the handler so bytes that are not the method's request message (or
carry invalid UTF-8 in a string field) get INVALID_ARGUMENT with a fixed text instead.
Seeing every request's size first, it also has the memory of huge requests released once
their call ends (memory_release.py).
"""

from __future__ import annotations

import inspect
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import grpc.aio
from shellgate.common.errors import InvalidArgumentError
from shellgate.common.grpc.status import status_for
from shellgate.common.memory_release import MemoryRelease

Deserializer = Callable[[bytes], Any]


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


def _forgetting_coroutine(fn: Callable[[Any, Any], Awaitable[Any]]) -> Any:
    async def handler(request: Any, context: Any) -> Any:
        try:
            return await fn(request, context)
        except BaseException as exc:
            _forget_on_done(exc, context)
            raise

    return handler


def _forgetting_generator(fn: Callable[[Any, Any], AsyncIterator[Any]]) -> Any:
    async def handler(request: Any, context: Any) -> AsyncIterator[Any]:
        try:
            async for item in fn(request, context):
                yield item
        except BaseException as exc:
            _forget_on_done(exc, context)
            raise

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


def _guard(handler: Any, method: str, release: MemoryRelease) -> Any:
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
            request_deserializer=None, unary_unary=_forgetting_coroutine(unary_unary)
        )
    if handler.unary_stream is not None:
        inner_us = handler.unary_stream
        if inspect.isasyncgenfunction(inner_us):

            async def unary_stream(raw: bytes, context: Any) -> AsyncIterator[Any]:
                request = await _decode(raw, deserialize, context, method, release)
                async for item in inner_us(request, context):
                    yield item

            return handler._replace(
                request_deserializer=None, unary_stream=_forgetting_generator(unary_stream)
            )

        # A coroutine handler that streams through context.write (grpc's Health.Watch).
        async def unary_stream_writer(raw: bytes, context: Any) -> Any:
            return await _stream_via_write(
                inner_us(await _decode(raw, deserialize, context, method, release), context),
                context,
            )

        return handler._replace(
            request_deserializer=None, unary_stream=_forgetting_coroutine(unary_stream_writer)
        )
    if handler.stream_unary is not None:
        inner_su = handler.stream_unary

        async def stream_unary(raw_iter: AsyncIterator[bytes], context: Any) -> Any:
            return await inner_su(requests(raw_iter, context), context)

        return handler._replace(
            request_deserializer=None, stream_unary=_forgetting_coroutine(stream_unary)
        )
    inner_ss = handler.stream_stream
    if inspect.isasyncgenfunction(inner_ss):

        async def stream_stream(raw_iter: AsyncIterator[bytes], context: Any) -> AsyncIterator[Any]:
            async for item in inner_ss(requests(raw_iter, context), context):
                yield item

        return handler._replace(
            request_deserializer=None, stream_stream=_forgetting_generator(stream_stream)
        )

    async def stream_stream_writer(raw_iter: AsyncIterator[bytes], context: Any) -> Any:
        return await _stream_via_write(inner_ss(requests(raw_iter, context), context), context)

    return handler._replace(
        request_deserializer=None, stream_stream=_forgetting_coroutine(stream_stream_writer)
    )


class DecodeGuardInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[type-arg]
    """Deserialize requests inside the handler so bad bytes get INVALID_ARGUMENT."""

    # Known methods only (unknown ones never get here), so this stays small; the bound is
    # a backstop.
    _CACHE_MAX = 512

    def __init__(self, release: MemoryRelease | None = None) -> None:
        self.release = release if release is not None else MemoryRelease()
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
        guarded = _guard(handler, method, self.release)
        if len(self._guarded) >= self._CACHE_MAX:
            self._guarded.clear()
        self._guarded[method] = (handler, guarded)
        return guarded
