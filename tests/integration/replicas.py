"""The multi-replica harness: N router processes sharing one real Redis and real daemons.

Everything is a real process on loopback, started here: `redis-server` (restartable on
its port, with or without AOF), exec-server daemons sharing one token, and router
replicas run as `shellgate serve --config FILE` children so a test can SIGKILL one. Each
replica's log goes to a file under the fleet's folder (read it with `Replica.log()`).
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from shellgate.v1 import common_pb2, router_pb2, router_pb2_grpc

from tests.child import stop_child
from tests.execserver_harness import Daemon, daemon_subprocess
from tests.integration.shared_support import (
    REDIS_SERVER,
    free_port,
    seal_key_file,
    wait_listening,
)
from tests.router_harness import completed, function_item, turn

__all__ = [
    "Fleet",
    "RedisProcess",
    "Replica",
    "body",
    "fleet",
    "request",
    "run",
    "start_router_process",
]

TOKEN = "fleet-s3cret-token"


class RedisProcess:
    """A loopback redis-server on a fixed port that a test can stop and start again."""

    def __init__(self, folder: Path, *, aof: bool = False) -> None:
        assert REDIS_SERVER is not None
        self.port = free_port()
        self.folder = folder
        self.aof = aof
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The URL routers connect to."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, *, aof: bool | None = None) -> None:
        """Start (again) on the same port; `aof` switches append-only persistence."""
        if aof is not None:
            self.aof = aof
        assert REDIS_SERVER is not None and self.proc is None
        self.folder.mkdir(parents=True, exist_ok=True)
        args = [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                "--dir", str(self.folder), "--protected-mode", "yes",
                "--appendonly", "yes" if self.aof else "no", "--appendfsync", "always"]  # fmt: skip
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_listening(self.proc, self.port, "redis-server")

    def stop(self, *, kill: bool = False) -> None:
        """Stop it (SIGKILL with `kill`: nothing is flushed beyond what AOF already wrote)."""
        if self.proc is None:
            return
        if kill:
            self.proc.kill()
        else:
            self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None


@dataclass
class Replica:
    """One router process of the fleet."""

    name: str
    proc: subprocess.Popen[bytes]
    port: int
    log_path: Path
    channel: grpc.Channel = field(init=False)
    stub: router_pb2_grpc.ToolRouterServiceStub = field(init=False)

    def __post_init__(self) -> None:
        self.channel = grpc.insecure_channel(f"127.0.0.1:{self.port}")
        self.stub = router_pb2_grpc.ToolRouterServiceStub(self.channel)

    @property
    def alive(self) -> bool:
        """Whether the process still runs."""
        return self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL: the replica dies with whatever it held in memory."""
        self.proc.kill()
        self.proc.wait()
        self._close()

    def _close(self) -> None:
        self.channel.close()
        # The port was read from stdout: close the pipe (else a ResourceWarning at GC).
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 15 s."""
        stop_child(self.proc)
        self._close()

    def log(self) -> str:
        """What the replica logged so far."""
        return self.log_path.read_text(errors="replace")

    def execute(
        self, request: router_pb2.ExecuteRequest, timeout: float = 30
    ) -> list[router_pb2.ExecuteResponse]:
        """All events of one Execute."""
        return list(self.stub.Execute(request, timeout=timeout))


@dataclass
class Fleet:
    """Routers sharing a Redis and daemons; `config_path` is the routers' common config."""

    folder: Path
    redis: RedisProcess
    daemons: list[Daemon]
    routers: list[Replica]
    config_path: Path
    token_file: Path

    def start_router(self, name: str | None = None) -> Replica:
        """Start one more replica with the fleet's config."""
        replica = _start_router(self.config_path, self.folder, name or f"r{len(self.routers)}")
        self.routers.append(replica)
        return replica

    def live(self) -> list[Replica]:
        """The replicas still running."""
        return [r for r in self.routers if r.alive]


def _start_router(config: Path, folder: Path, name: str, timeout_s: float = 30) -> Replica:
    log_path = folder / f"{name}.log"
    args = [sys.executable, "-m", "shellgate.router.cli.main", "serve", "--config", str(config),
            "--listen", "127.0.0.1:0", "--print-port", "--no-local-token",
            "--log-level", "INFO"]  # fmt: skip
    with log_path.open("ab") as log:
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, env=dict(os.environ))
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout_s)
    line = proc.stdout.readline().decode().strip() if ready else ""
    if not line.isdigit():
        proc.kill()
        proc.wait()
        raise RuntimeError(f"router {name} did not start: {line!r}\n{log_path.read_text()[-3000:]}")
    return Replica(name, proc, int(line), log_path)


def start_router_process(config: Path, folder: Path, name: str) -> Replica:
    """One router process (`serve --config`), not part of a fleet; the caller stops it."""
    return _start_router(config, folder, name)


def _config_text(fleet_dir: Path, redis_url: str, daemons: Sequence[Daemon], extra: str) -> str:
    rules = fleet_dir / "rules"
    rules.mkdir(exist_ok=True)
    lines = [
        f'redis_url = "{redis_url}"',
        f'shared_state_key_file = "{seal_key_file(fleet_dir)}"',
        "local_environment = true",
        f'local_cwd = "{fleet_dir}"',
        f'rules_dirs = ["{rules}"]',
        extra,
    ]
    for index, daemon in enumerate(daemons, start=1):
        lines += [
            "[[environments]]",
            f'id = "box{index}"',
            f'target = "{daemon.target}"',
            "insecure = true",
            f'token_file = "{fleet_dir / "router-token"}"',
            "connect_timeout_ms = 3000",
            "call_timeout_ms = 10000",
        ]
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def fleet(
    folder: Path,
    *,
    routers: int = 3,
    daemons: int = 2,
    aof: bool = False,
    extra_config: str = "",
    rules: str = "",
    daemon_config: str = "",
) -> Iterator[Fleet]:
    """`routers` replicas, one Redis and `daemons` daemons (environments box1, box2, …).

    `extra_config` is TOML placed before the environment tables (top-level keys and whole
    tables such as `[limits]`); `rules` becomes `rules/base.rules`; `daemon_config` is the
    daemons' own TOML (`serve --config`, e.g. `exited_retention_ms = 1000`).
    """
    folder.mkdir(parents=True, exist_ok=True)
    token_file = folder / "daemon-tokens"
    token_file.write_text(f"router {TOKEN}\n")
    (folder / "router-token").write_text(TOKEN + "\n")
    redis = RedisProcess(folder / "redis", aof=aof)
    redis.start()
    started: list[Replica] = []
    try:
        with contextlib.ExitStack() as stack:
            running = []
            for index in range(daemons):
                root = folder / f"daemon{index + 1}"
                root.mkdir(exist_ok=True)
                args = ["--token-file", str(token_file), "--root", str(root)]
                if daemon_config:
                    config_file = folder / f"daemon{index + 1}.toml"
                    config_file.write_text(daemon_config)
                    args += ["--config", str(config_file)]
                running.append(stack.enter_context(daemon_subprocess(args)))
            config_path = folder / "router.toml"
            config_path.write_text(_config_text(folder, redis.url, running, extra_config))
            if rules:
                (folder / "rules" / "base.rules").write_text(rules)
            for index in range(routers):
                started.append(_start_router(config_path, folder, f"r{index}"))
            the_fleet = Fleet(folder, redis, running, started, config_path, token_file)
            try:
                yield the_fleet
            finally:
                for replica in the_fleet.routers:
                    replica.stop()
    finally:
        for replica in started:
            if replica.alive:
                replica.stop()
        redis.stop()



def request(
    thread: str, name: str, args: Mapping[str, object], call_id: str, env: str = "box1"
) -> router_pb2.ExecuteRequest:
    """One Execute of a function call on a fleet daemon (no approvals, no login shell)."""
    if name != "write_stdin":
        args = {"login": False, **args}
    return router_pb2.ExecuteRequest(
        thread_id=thread,
        turn=turn(environment_id=env, approval=common_pb2.APPROVAL_POLICY_KIND_NEVER),
        item=function_item(name, dict(args), call_id),
    )


def run(
    replica: Replica, thread: str, name: str, args: Mapping[str, object], call_id: str,
    env: str = "box1", timeout: float = 120,
) -> router_pb2.ExecutionCompleted:  # fmt: skip
    """The completed event of one call through `replica`."""
    return completed(replica.execute(request(thread, name, args, call_id, env), timeout=timeout))


def body(done: router_pb2.ExecutionCompleted) -> str:
    """The model text after `Output:`."""
    return done.output_text.split("Output:\n", 1)[1]
