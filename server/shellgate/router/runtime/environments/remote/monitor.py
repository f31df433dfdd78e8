"""Periodic health probes of every remote environment, so reachability is recent everywhere.

Each router replica probes every daemon (gRPC health Check) once per interval. What
ListEnvironments reports is therefore the last probe's result (or a later call's failure),
never a connection state that only this replica happened to see: two replicas watching the
same daemons agree within one interval after one dies. A daemon found down opens its
circuit (environments/remote/breaker.py), so calls fail fast until it answers again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from shellgate.router.runtime.environments.registry import EnvironmentRegistry

__all__ = ["run_health_probes"]

_log = logging.getLogger(__name__)


async def probe_all(registry: EnvironmentRegistry) -> None:
    """One health probe of every remote environment still listed in DNS (in parallel)."""
    envs = [env for env in registry.remotes() if not env.withdrawn]
    results = await asyncio.gather(*(env.check_health() for env in envs), return_exceptions=True)
    for env, result in zip(envs, results, strict=True):
        if isinstance(result, Exception):
            _log.warning("health probe of %s failed: %r", env.environment_id, result)


async def run_health_probes(
    registry: EnvironmentRegistry, interval_ms: int, stop: asyncio.Event
) -> None:
    """Probe every `interval_ms` (the first after one interval) until `stop` is set."""
    interval_s = max(interval_ms, 1) / 1000
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), interval_s)
        if not stop.is_set():
            await probe_all(registry)
