"""The one translation point from domain errors to gRPC statuses (code, message, reason)."""

from __future__ import annotations

import asyncio
import functools
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import grpc
from shellgate.common.errors import ServiceError
from shellgate.common.grpc.status import status_for

log = logging.getLogger(__name__)
T = TypeVar("T")


async def _abort_for(
    exc: BaseException, context: grpc.aio.ServicerContext[Any, Any], servicer: Any
) -> None:
    # A servicer may count error statuses (metrics): `on_rpc_error(code_name)`.
    observe: Callable[[str], None] | None = getattr(servicer, "on_rpc_error", None)
    if isinstance(exc, ServiceError):
        # The reason and errno ride in the grpc-status-details-bin trailer (ErrorInfo).
        status = status_for(exc)
        if observe is not None:
            observe(status.code.name)
        await context.abort(status.code, status.details, status.trailing_metadata)
    if observe is not None:
        observe(grpc.StatusCode.INTERNAL.name)
    incident = uuid.uuid4().hex[:12]
    # The exception goes to our log only; callers get the incident id, never the text.
    log.error("internal error, incident %s", incident, exc_info=exc)
    await context.abort(grpc.StatusCode.INTERNAL, f"internal error (incident {incident})")


def unary(
    fn: Callable[[Any, Any, Any], Awaitable[T]],
) -> Callable[[Any, Any, Any], Awaitable[T]]:
    """Wrap a unary handler: domain errors → their status and reason, anything else → INTERNAL."""

    @functools.wraps(fn)
    async def wrapper(self: Any, request: Any, context: Any) -> T:
        try:
            return await fn(self, request, context)
        except (asyncio.CancelledError, grpc.aio.AbortError):
            raise
        except Exception as exc:
            await _abort_for(exc, context, self)
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
            await _abort_for(exc, context, self)
            raise

    return wrapper
