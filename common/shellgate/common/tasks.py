"""Task ownership: every background task has an owner that cancels it, awaits it and sees it fail.

Two shapes cover the code base (STYLE §9, review C10):

* `cancel_and_wait(*tasks)` — the teardown of tasks one coroutine started and must not
  outlive (a pump, a watcher, a reader): cancel every one first, then wait for all, so
  they wind down concurrently.
* `TaskSet` — fire-and-forget work an object starts and keeps (a cleanup kill, a pruned
  session's teardown): each failure is logged when it happens, and the owner's shutdown
  awaits (`join`) or cancels (`aclose`) whatever is left.

Where the tasks' lifetimes nest inside one block and a failure should cancel the
siblings, `asyncio.TaskGroup` is the right tool instead; these helpers are for tasks that
outlive a block (owned by an object or an async generator) or whose failure must not
cancel the owner.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["TaskSet", "cancel_and_wait", "log_failure"]

T = TypeVar("T")
_log = logging.getLogger(__name__)


def log_failure(task: asyncio.Task[Any], log: logging.Logger = _log) -> None:
    """Log a finished task's exception (a cancellation is not a failure); marks it retrieved."""
    if task.cancelled():
        return
    exc = task.exception()
    if exc is not None:
        log.error("task %s failed", task.get_name(), exc_info=exc)


async def cancel_and_wait(
    *tasks: asyncio.Task[Any] | None, log: logging.Logger | None = _log
) -> None:
    """Cancel every unfinished task, then wait until all are done; failures are logged.

    The tasks' own exceptions never propagate (their owner is tearing down; `log=None`
    when a done callback already reports them). If the
    caller is itself cancelled while waiting, every task was already told to stop and
    the CancelledError propagates: this helper never swallows its caller's cancellation.
    """
    owned = [task for task in tasks if task is not None]
    for task in owned:
        task.cancel()
    if not owned:
        return
    await asyncio.wait(owned)
    if log is not None:
        for task in owned:
            log_failure(task, log)


class TaskSet:
    """Background tasks of one owner: started by `spawn`, failures logged, ended by the owner."""

    def __init__(self, log: logging.Logger = _log) -> None:
        self._log = log
        self._tasks: set[asyncio.Task[Any]] = set()

    def __len__(self) -> int:
        return len(self._tasks)

    def spawn(self, coro: Coroutine[Any, Any, T], *, name: str) -> asyncio.Task[T]:
        """Start `coro` as a task held here until it finishes (a failure is logged then)."""
        # Owned by this set (and so by its owner): held until done, then its failure logged.
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._finished)
        return task

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        log_failure(task, self._log)

    async def join(self) -> None:
        """Wait until every task finished, including ones spawned while waiting."""
        while self._tasks:
            await asyncio.wait(list(self._tasks))

    async def aclose(self) -> None:
        """Cancel every task and wait until all are done."""
        while self._tasks:
            # Failures are logged by _finished, not twice.
            await cancel_and_wait(*self._tasks, log=None)
