"""Replica bus on Redis pub/sub: requests that must reach the replica holding a live object.

Interrupt (an in-flight call) and TerminateSession (a session on the embedded `local`
environment) can only act where the stream or the process lives. The replica that gets such
a request and does not hold the object broadcasts it on `{prefix}bus`; every subscribed
replica answers on the asker's own channel `{prefix}bus:{instance}` whether it held it.
PUBLISH returns how many replicas received the request, so the asker waits for exactly that
many answers (bounded by `timeout_s`) and a request nobody holds is NOT_FOUND, as on one
router. The same bus carries the "amendments changed" notification (`rules_layer`).
Messages are JSON; a malformed one is logged and dropped. Every publish and the subscriber
go through the store's one gate (`redis_link`): a lost subscription or an undelivered
message is a failure of the shared store, counted and logged once per outage by its
monitor, and the subscriber re-subscribes by itself when Redis is back.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from redis.exceptions import RedisError
from shellgate.common.backoff import Backoff
from shellgate.common.errors import SharedStateUnavailableError
from shellgate.common.tasks import TaskSet, cancel_and_wait
from shellgate.router.runtime.store.redis_link import RedisLink

__all__ = ["BusHandler", "RedisBus"]

_log = logging.getLogger(__name__)

# A request's handler: the local answer, or None when this replica does not hold the object.
BusHandler = Callable[[dict[str, Any]], Awaitable[dict[str, Any] | None]]
Notify = Callable[[], Awaitable[None]]
# Reconnect backoff of the subscriber (seconds): doubled up to the cap, which is short so
# that every replica hears the bus again within about a second of Redis coming back.
_BACKOFF_START_S = 0.1
_BACKOFF_CAP_S = 1.0
# Notices are also re-run this often: a notice published while this replica was
# disconnected (or lost by Redis) is caught up with without a restart.
REFRESH_S = 10.0


class RedisBus:
    """Broadcast requests with counted answers, and change notifications, between replicas."""

    def __init__(
        self, link: RedisLink, *, prefix: str, instance_id: str, timeout_s: float = 2.0
    ) -> None:
        assert link.bus_client is not None
        self._link = link
        self._r = link.bus_client
        self.instance_id = instance_id
        self.channel = f"{prefix}bus"
        self.reply_channel = f"{prefix}bus:{instance_id}"
        self._timeout_s = timeout_s
        self._handlers: dict[str, BusHandler] = {}
        self._notify: dict[str, Notify] = {}
        self._waiting: dict[str, asyncio.Queue[dict[str, Any]]] = {}
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        # Notice refreshes run beside the subscriber (a slow one must not hold the next
        # message); owned here, cancelled and awaited by aclose.
        self._notices = TaskSet(_log)

    def on_request(self, op: str, handler: BusHandler) -> None:
        """Answer broadcast requests of kind `op` with `handler`."""
        self._handlers[op] = handler

    def on_notice(self, op: str, notify: Notify) -> None:
        """Run `notify` on every `op` notice, and after each (re)subscription (missed ones)."""
        self._notify[op] = notify

    async def start(self) -> None:
        """Start the subscriber; waits (bounded) for the first subscription."""
        if self._task is None:
            self._task = asyncio.create_task(self._listen(), name="replica-bus")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._ready.wait(), self._timeout_s)

    async def ask(self, op: str, body: dict[str, Any]) -> list[dict[str, Any]]:
        """Broadcast a request; the answers of the replicas that held the object."""
        request_id = uuid.uuid4().hex
        answers: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._waiting[request_id] = answers
        message = {**body, "op": op, "id": request_id, "reply_to": self.reply_channel}
        held: list[dict[str, Any]] = []
        try:
            text = json.dumps(message)
            receivers = int(
                await self._link.run("bus publish", lambda: self._r.publish(self.channel, text))
            )
            loop = asyncio.get_running_loop()
            deadline = loop.time() + self._timeout_s
            for _ in range(receivers):
                left = deadline - loop.time()
                if left <= 0:
                    break
                try:
                    answer = await asyncio.wait_for(answers.get(), left)
                except TimeoutError:
                    break
                if answer.get("held"):
                    held.append(answer)
                    break  # one holder is enough: the object lives in one replica
        except SharedStateUnavailableError:
            pass  # counted and logged by the store's monitor: nobody heard it
        finally:
            self._waiting.pop(request_id, None)
        return held

    async def notice(self, op: str) -> None:
        """Tell every replica that `op` changed (best effort: they also check periodically)."""
        text = json.dumps({"op": op})
        # Not sent while the store is down: counted by its monitor; the periodic refresh
        # of every replica catches up.
        with contextlib.suppress(SharedStateUnavailableError):
            await self._link.run("bus publish", lambda: self._r.publish(self.channel, text))

    async def _listen(self) -> None:
        backoff = Backoff(_BACKOFF_START_S, _BACKOFF_CAP_S)
        while True:
            pubsub = self._r.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(self.channel, self.reply_channel)
                backoff.reset()
                await self._after_subscribe()
                # Ready once the notices ran: a new replica applies shared amendments first.
                self._ready.set()
                loop = asyncio.get_running_loop()
                refreshed = loop.time()
                while True:
                    message = await pubsub.get_message(timeout=1.0)
                    if message is not None:
                        await self._dispatch(message.get("channel"), message.get("data"))
                    if loop.time() - refreshed >= REFRESH_S:
                        refreshed = loop.time()
                        await self._after_subscribe()
            except asyncio.CancelledError:
                raise
            except (RedisError, OSError) as exc:
                # The store is down (or was restarted): its monitor logs the outage once.
                self._link.failed("bus subscribe", exc)
                await asyncio.sleep(backoff.next())
            except Exception as exc:
                delay = backoff.next()
                _log.warning("replica bus: subscriber lost (%s); retrying in %.1fs", exc, delay)
                await asyncio.sleep(delay)
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()  # type: ignore[no-untyped-call, unused-ignore]

    async def _after_subscribe(self) -> None:
        for op in self._notify:
            await self._run_notice(op)

    async def _dispatch(self, channel: object, data: object) -> None:
        try:
            message = json.loads(data) if isinstance(data, bytes | str) else None
            if not isinstance(message, dict):
                raise ValueError("not an object")
        except ValueError as exc:
            _log.warning("replica bus: dropped a malformed message: %s", exc)
            return
        op = message.get("op")
        name = channel.decode() if isinstance(channel, bytes) else channel
        if name == self.reply_channel:
            queue = self._waiting.get(str(message.get("id")))
            if queue is not None:
                queue.put_nowait(message)
            return
        if op in self._notify:
            self._notices.spawn(self._run_notice(str(op)), name=f"bus-notice-{op}")
            return
        handler = self._handlers.get(str(op))
        reply_to = message.get("reply_to")
        if handler is None or not isinstance(reply_to, str):
            return
        # Answered in order, quickly: a handler only sets an event or kills one process.
        try:
            answer = await handler(message)
        except Exception:
            _log.exception("replica bus: %s request failed", op)
            answer = None
        reply = {**(answer or {}), "id": message.get("id"), "held": answer is not None}
        text = json.dumps(reply)
        with contextlib.suppress(SharedStateUnavailableError):  # counted by the monitor
            await self._link.run("bus answer", lambda: self._r.publish(reply_to, text))

    async def _run_notice(self, op: str) -> None:
        try:
            await self._notify[op]()
        except SharedStateUnavailableError:
            pass  # the store is down: counted and logged by its monitor; retried later
        except Exception:
            _log.exception("replica bus: %s refresh failed", op)

    async def aclose(self) -> None:
        """Stop the subscriber."""
        task, self._task = self._task, None
        await cancel_and_wait(task, log=_log)
        await self._notices.aclose()
