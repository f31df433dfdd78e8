"""The one translation point from domain errors to gRPC status codes."""

from __future__ import annotations

import asyncio
import functools
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import grpc
from shellgate.common.errors import ExecServerError

log = logging.getLogger(__name__)
T = TypeVar("T")


def status_of(exc: ExecServerError) -> grpc.StatusCode:
    """The gRPC code of a domain error."""
    code: grpc.StatusCode = grpc.StatusCode[exc.code]
    return code


async def _abort_for(exc: BaseException, context: grpc.aio.ServicerContext[Any, Any]) -> None:
    if isinstance(exc, ExecServerError):
        await context.abort(status_of(exc), exc.message)
    incident = uuid.uuid4().hex[:12]
    # The exception goes to our log only; callers get the incident id, never the text.
    log.error("internal error, incident %s", incident, exc_info=exc)
    await context.abort(grpc.StatusCode.INTERNAL, f"internal error (incident {incident})")


def unary(
    fn: Callable[[Any, Any, Any], Awaitable[T]],
) -> Callable[[Any, Any, Any], Awaitable[T]]:
    """Wrap a unary handler: domain errors → their status, anything else → INTERNAL."""

    @functools.wraps(fn)
    async def wrapper(self: Any, request: Any, context: Any) -> T:
        try:
            return await fn(self, request, context)
        except (asyncio.CancelledError, grpc.aio.AbortError):
            raise
        except Exception as exc:
            await _abort_for(exc, context)
            raise  # unreachable: abort raises

    return wrapper


def streaming(
    fn: Callable[[Any, Any, Any], AsyncIterator[T]],
) -> Callable[[Any, Any, Any], AsyncIterator[T]]:
    """Wrap a server-streaming handler the same way."""

    @functools.wraps(fn)
    async def wrapper(self: Any, request: Any, context: Any) -> AsyncIterator[T]:
        try:
            async for item in fn(self, request, context):
                yield item
        except (asyncio.CancelledError, grpc.aio.AbortError):
            raise
        except Exception as exc:
            await _abort_for(exc, context)
            raise

    return wrapper
