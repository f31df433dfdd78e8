"""DNS environment discovery: `localhost` → real daemons, health, vanished addresses
reported and never replaced (spec 06 §5)."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from shellgate.common.errors import EnvironmentNotFoundError
from shellgate.router.runtime.environments.registry import EnvironmentRegistry, LocalEnvironment
from shellgate.router.runtime.environments.remote.config import DialSettings
from shellgate.router.runtime.environments.remote.discovery import (
    DnsDiscovery,
    DnsDiscoveryConfig,
    environment_id_for,
    resolve_addresses,
)
from shellgate.router.service.config import ConfigError
from shellgate.v1 import router_pb2

from tests.execserver_harness import daemon_subprocess
from tests.router_harness import (
    completed,
    execute,
    function_item,
    router_config,
    running_router,
    turn,
)
from tests.waiting import eventually


def test_environment_ids_are_stable() -> None:
    assert environment_id_for("build", "10.0.0.7") == "build-10.0.0.7"
    assert environment_id_for("build", "fd00:0::1") == "build-fd00--1"


def test_localhost_discovery_with_real_daemons(tmp_path: Path) -> None:
    with daemon_subprocess(["--root", str(tmp_path)]) as daemon:

        async def main() -> None:
            addresses = await resolve_addresses("localhost", daemon.port)
            assert "127.0.0.1" in addresses
            registry = EnvironmentRegistry(LocalEnvironment(cwd=str(tmp_path)))
            config = DnsDiscoveryConfig(
                dns_name="localhost", port=daemon.port, id_prefix="box",
                dial=DialSettings(connect_timeout_ms=1_000),
            )  # fmt: skip
            discovery = DnsDiscovery(config, registry)
            ids = await discovery.refresh_once()
            assert "box-127.0.0.1" in ids
            assert registry.ids()[0] == "local"
            status = {s.environment_id: s for s in await registry.statuses()}
            assert status["box-127.0.0.1"].reachable
            assert status["box-127.0.0.1"].target == f"127.0.0.1:{daemon.port}"
            # The daemon listens on IPv4 only: a ::1 record is listed, unreachable, with why.
            if "box--1" in status:
                assert not status["box--1"].reachable and status["box--1"].last_error
            # The daemon goes away: still listed, unreachable, with the reason.
            daemon.proc.send_signal(signal.SIGKILL)
            daemon.proc.wait(10)
            await discovery.refresh_once()
            status = {s.environment_id: s for s in await registry.statuses()}
            assert not status["box-127.0.0.1"].reachable
            assert status["box-127.0.0.1"].last_error
            await registry.aclose()

        asyncio.run(main())


def test_vanished_addresses_stay_listed_and_return(tmp_path: Path) -> None:
    with daemon_subprocess(["--root", str(tmp_path)]) as daemon:
        answers: list[list[str]] = [["127.0.0.1"], [], ["127.0.0.1"]]

        async def resolver(name: str, port: int) -> list[str]:
            return answers.pop(0)

        async def main() -> None:
            registry = EnvironmentRegistry(None)
            config = DnsDiscoveryConfig(dns_name="execd.svc", port=daemon.port, id_prefix="x")
            discovery = DnsDiscovery(config, registry, resolver=resolver)
            assert await discovery.refresh_once() == ["x-127.0.0.1"]
            assert await discovery.refresh_once() == []
            (gone,) = await registry.statuses()
            assert gone.environment_id == "x-127.0.0.1" and not gone.reachable
            assert gone.last_error == "127.0.0.1 is no longer resolved by execd.svc"
            assert await discovery.refresh_once() == ["x-127.0.0.1"]
            (back,) = await registry.statuses()
            assert back.reachable and registry.ids() == ["x-127.0.0.1"]
            # The periodic runner stops when asked.
            stop = asyncio.Event()
            answers.append(["127.0.0.1"])
            task = asyncio.create_task(discovery.run(stop))
            await asyncio.sleep(0.05)
            stop.set()
            await asyncio.wait_for(task, 2)
            await registry.aclose()

        asyncio.run(main())


def test_unknown_ids_share_one_rate_limited_lookup() -> None:
    lookups: list[str] = []
    release = asyncio.Event()

    async def resolver(name: str, port: int) -> list[str]:
        lookups.append(name)
        await release.wait()
        return ["127.0.0.9"]

    async def main() -> None:
        registry = EnvironmentRegistry(None)
        now = [100.0]
        config = DnsDiscoveryConfig(
            dns_name="execd.svc", port=1, id_prefix="x", miss_refresh_min_interval_ms=1_000
        )
        DnsDiscovery(config, registry, resolver=resolver, clock=lambda: now[0])
        # Ten concurrent misses: one lookup, and every one of them sees its result.
        misses = [asyncio.create_task(registry.find("x-127.0.0.9")) for _ in range(10)]
        await asyncio.sleep(0.01)
        release.set()
        found = await asyncio.gather(*misses)
        assert len(lookups) == 1 and {e.environment_id for e in found} == {"x-127.0.0.9"}
        # Another miss right after: no lookup (rate-limited), the id stays unknown.
        with pytest.raises(EnvironmentNotFoundError):
            await registry.find("x-127.0.0.10")
        assert len(lookups) == 1
        now[0] += 1.5
        with pytest.raises(EnvironmentNotFoundError):
            await registry.find("x-127.0.0.10")
        assert len(lookups) == 2
        await registry.aclose()

    asyncio.run(main())


def test_vanished_addresses_are_pruned_after_grace_and_use() -> None:
    answers = [["127.0.0.9"], [], [], [], ["127.0.0.9"]]
    in_use = {"x-127.0.0.9"}
    now = [0.0]

    async def resolver(name: str, port: int) -> list[str]:
        return answers.pop(0)

    async def main() -> None:
        registry = EnvironmentRegistry(None)
        config = DnsDiscoveryConfig(
            dns_name="execd.svc", port=1, id_prefix="x", prune_after_ms=1_000,
            dial=DialSettings(connect_timeout_ms=200),
        )  # fmt: skip
        discovery = DnsDiscovery(
            config, registry, resolver=resolver, in_use=lambda: set(in_use), clock=lambda: now[0]
        )
        await discovery.refresh_once()
        await discovery.refresh_once()  # gone from DNS at t=0
        now[0] = 5.0
        await discovery.refresh_once()  # past the grace, but a session runs on it
        assert registry.ids() == ["x-127.0.0.9"]
        in_use.clear()
        await discovery.refresh_once()
        assert registry.ids() == [] and discovery.found == {}
        await discovery.refresh_once()  # back in DNS: listed again under the same id
        assert registry.ids() == ["x-127.0.0.9"]
        await registry.aclose()

    asyncio.run(main())


def _router_health(channel: grpc.Channel) -> int:
    stub = health_pb2_grpc.HealthStub(channel)
    return int(stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=5).status)


def test_discovery_only_router_serves_once_a_daemon_is_found(tmp_path: Path) -> None:
    nowhere = DnsDiscoveryConfig(dns_name="nothing.invalid", port=1, id_prefix="x")
    config = router_config(local_environment=False, discovery=(nowhere,))
    with running_router(config) as router:
        # Started (no "no environments" refusal), but not ready: nothing to run on.
        assert _router_health(router.channel) == health_pb2.HealthCheckResponse.NOT_SERVING
    with daemon_subprocess(["--root", str(tmp_path)]) as daemon:
        found = DnsDiscoveryConfig(dns_name="localhost", port=daemon.port, id_prefix="box")
        config = router_config(local_environment=False, discovery=(found,))
        with running_router(config) as router:
            eventually(
                lambda: _router_health(router.channel) == health_pb2.HealthCheckResponse.SERVING,
                "the router SERVING",
                10,
            )
            done = completed(execute(router.stub, router_pb2.ExecuteRequest(
                thread_id="t", turn=turn(environment_id="box-127.0.0.1", cwd="/tmp"),
                item=function_item("exec_command", {"cmd": "echo found"}),
            )))  # fmt: skip
            assert done.exit_code == 0 and "found" in done.output_text, done.output_text
    # Without discovery an empty router still refuses to start.
    with pytest.raises(ConfigError, match="no environments"):
        router_config(local_environment=False).validate()
