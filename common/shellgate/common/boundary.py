"""The one translation point from domain errors to gRPC statuses (code, message, reason)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable
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
    fn: Callable[[Any, Any, Any], AsyncGenerator[T, None]],
) -> Callable[[Any, Any, Any], Awaitable[None]]:
    """Wrap a server-streaming handler the same way, writing its items itself.

    grpc's own loop over an async-generator handler never closes the generator when the
    RPC is cancelled while a write is pending: its `finally` (which cancels the call, kills
    its process, withdraws its approval) then waits for the garbage collector. Written here
    under `aclosing`, the generator is closed at once whichever await the cancel hits.
    """

    @functools.wraps(fn)
    async def wrapper(self: Any, request: Any, context: Any) -> None:
        try:
            async with contextlib.aclosing(fn(self, request, context)) as items:
                async for item in items:
                    await context.write(item)
        except (asyncio.CancelledError, grpc.aio.AbortError):
            raise
        except Exception as exc:
            await _abort_for(exc, context, self)
            raise

    return wrapper
