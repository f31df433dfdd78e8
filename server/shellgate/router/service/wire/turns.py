"""Domain turns of requests: environment views, defaults applied, converted once per input.

A client sends the same TurnContext with every call of a turn and the conversion is pure,
so each converted `RouterTurn` is kept per (thread, wire turn, environment views, caller's
environments). `turn` may probe a remote environment or look an unknown id up again (the
event loop); `turn_now` is the same lookup when it needs neither, from any thread (the
Project door's workers), and answers None otherwise.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Set

from shellgate.router.handler.environments import ReportedShell
from shellgate.router.handler.shells import HostShellFacts
from shellgate.router.pipeline import RouterTurn
from shellgate.router.runtime.environments.registry import EnvironmentRegistry, LocalEnvironment
from shellgate.router.runtime.environments.remote.environment import RemoteEnvironment
from shellgate.router.runtime.threads.registry import validate_thread_id
from shellgate.router.service.config import RouterConfig
from shellgate.router.service.wire.turn import EnvironmentView, TurnInputs, router_turn
from shellgate.v1 import common_pb2

__all__ = ["TURN_CACHE_SIZE", "UNREACHABLE_SHELL", "TurnBook"]

# Shown for a remote environment whose daemon could not be reached (see `views`).
UNREACHABLE_SHELL = ReportedShell("sh", "/bin/sh")
# Converted turns kept (least recently used dropped first).
TURN_CACHE_SIZE = 256
_Key = tuple[object, ...]


class TurnBook:
    """The converted turns of one router, and the environment views they are built from."""

    def __init__(
        self, config: RouterConfig, environments: EnvironmentRegistry, host_shell: HostShellFacts
    ) -> None:
        self._config = config
        self._environments = environments
        self._host_shell = host_shell
        self._turns: OrderedDict[_Key, RouterTurn] = OrderedDict()
        # The door's workers read while the loop converts: one short lock for the dict.
        self._lock = threading.Lock()

    async def views(self, wanted: Set[str] | None = None) -> dict[str, EnvironmentView]:
        """What each environment reports; remote ones in `wanted` are probed (cached).

        A remote environment that cannot be reached keeps a placeholder POSIX shell so the
        call still projects; running it then answers the spec's "unavailable" text
        (spec 06 §5) — it is never replaced by another environment.
        """
        to_probe = [env.probe() for env in self._unprobed(wanted)]
        if to_probe:
            await asyncio.gather(*to_probe)
        return self._views()

    def _unprobed(self, wanted: Set[str] | None) -> list[RemoteEnvironment]:
        envs = (self._environments.get(env_id) for env_id in self._environments.ids())
        return [
            env for env in envs
            if isinstance(env, RemoteEnvironment) and env.info is None
            and (wanted is None or env.environment_id in wanted)
        ]  # fmt: skip

    def _views(self) -> dict[str, EnvironmentView]:
        views: dict[str, EnvironmentView] = {}
        for env_id in self._environments.ids():
            env = self._environments.get(env_id)
            if isinstance(env, LocalEnvironment):
                views[env_id] = EnvironmentView(env_id, False, env.cwd, None)
                continue
            info = env.info
            shell: ReportedShell | None = UNREACHABLE_SHELL
            cwd = "/"
            if info is not None:
                cwd = info.cwd or "/"
                shell = None
                reported = info.shell
                if reported is not None and reported.path:
                    name = "sh" if reported.type is None else reported.type.value
                    shell = ReportedShell(name, reported.path)
            views[env_id] = EnvironmentView(env_id, True, cwd, shell)
        return views

    async def turn(
        self, thread_id: str, turn: common_pb2.TurnContext, allowed: frozenset[str] | None
    ) -> RouterTurn:
        """The domain turn of a request (defaults applied, environments checked)."""
        validate_thread_id(thread_id)
        wanted = {e.environment_id for e in turn.environments}
        known = self._environments.ids()
        if not known or not wanted.issubset(known):
            # An id this replica has not discovered yet: look again before refusing it.
            await self._environments.refresh_unknown()
        wanted = self._wanted(wanted)
        views = await self.views(wanted)
        key = (thread_id, turn.SerializeToString(deterministic=True), tuple(views.items()),
               allowed)  # fmt: skip
        with self._lock:
            cached = self._turns.get(key)
            if cached is not None:
                self._turns.move_to_end(key)
                return cached
        inputs = TurnInputs(
            defaults=self._config.defaults,
            environments=views,
            host_shell=self._host_shell,
            allowed_environments=allowed,
            max_environments=self._config.limits.max_environments_per_turn,
        )
        converted = router_turn(thread_id, turn, inputs)
        with self._lock:
            self._turns[key] = converted
            if len(self._turns) > TURN_CACHE_SIZE:
                self._turns.popitem(last=False)
        return converted

    def turn_now(
        self, thread_id: str, turn: common_pb2.TurnContext, allowed: frozenset[str] | None
    ) -> RouterTurn | None:
        """The kept turn `turn` would answer, when finding it needs no probe and no lookup
        (any thread); None otherwise."""
        validate_thread_id(thread_id)
        wanted = {e.environment_id for e in turn.environments}
        known = self._environments.ids()
        if not known or not wanted.issubset(known):
            return None
        wanted = self._wanted(wanted)
        if self._unprobed(wanted):
            return None
        key = (thread_id, turn.SerializeToString(deterministic=True),
               tuple(self._views().items()), allowed)  # fmt: skip
        with self._lock:
            return self._turns.get(key)

    def _wanted(self, wanted: set[str]) -> set[str]:
        ids = self._environments.ids()
        return wanted if wanted or not ids else {ids[0]}
