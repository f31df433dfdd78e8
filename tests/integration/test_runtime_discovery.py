"""DNS environment discovery: `localhost` → real daemons, health, vanished addresses
reported and never replaced (spec 06 §5)."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

from shellgate.router.runtime.registry import EnvironmentRegistry, LocalEnvironment
from shellgate.router.runtime.remote.discovery import (
    DnsDiscovery,
    DnsDiscoveryConfig,
    environment_id_for,
    resolve_addresses,
)

from tests.execserver_harness import daemon_subprocess


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
                dns_name="localhost", port=daemon.port, id_prefix="box", connect_timeout_ms=1_000
            )
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
