"""A network-off sandbox reaches no host socket: the seccomp filter as Codex 0.169 applies it.

Real bubblewrap, a real Redis listening on a unix socket, a real gRPC listener (grpcio, as
the daemons' are) on a unix socket and a host datagram socket; each probe runs through a
real router's Execute, in its embedded environment and on a daemon. `socket(AF_UNIX)` and
`socketpair()` work (as under Codex: asyncio's self-pipe is a socketpair); `bind`, `connect`
and a datagram sent with `sendmsg` to a named socket do not. The last test compares every
answer with `codex sandbox` itself when the npm codex is installed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health, health_pb2_grpc
from shellgate.common.sandbox import sandbox_unavailable_reason
from shellgate.v1 import common_pb2, router_pb2

from tests.integration.codex_harness import CODEX_VERSION, codex_version, find_codex
from tests.integration.sandbox_support import probe_answers, router_with_daemon
from tests.integration.shared_support import REDIS_SERVER
from tests.router_harness import (
    Router,
    completed,
    execute,
    function_item,
    router_config,
    running_router,
    turn,
)
from tests.waiting import eventually

pytestmark = [
    pytest.mark.sandbox,
    pytest.mark.skipif(bool(sandbox_unavailable_reason()), reason="no bubblewrap sandbox"),
    pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server not installed"),
]
READ_ONLY = common_pb2.PERMISSION_PROFILE_KIND_READ_ONLY
WORKSPACE_WRITE = common_pb2.PERMISSION_PROFILE_KIND_WORKSPACE_WRITE
PROFILES = {"read-only": READ_ONLY, "workspace-write": WORKSPACE_WRITE}
FORGED_KEY = "shellgate:forged-approval"

PROBE = r"""
import json, os, socket, sys

redis_sock, grpc_sock, dgram_sock = sys.argv[1:4]


def attempt(action):
    try:
        action()
        return "ok"
    except OSError as exc:
        return f"errno {exc.errno}"


def connect(path):
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(path)


def bind():
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(f"probe-{os.getpid()}.sock")


def pair():
    for s in socket.socketpair():
        s.close()


def datagram():
    # No connect(): sendmsg names the host's socket itself.
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        s.sendmsg([b"forged"], [], 0, dgram_sock)


print("PROBE " + json.dumps({
    "socket(AF_UNIX)": attempt(lambda: socket.socket(socket.AF_UNIX).close()),
    "socket(AF_INET)": attempt(lambda: socket.socket(socket.AF_INET).close()),
    "socketpair()": attempt(pair),
    "bind()": attempt(bind),
    "connect(redis)": attempt(lambda: connect(redis_sock)),
    "connect(grpc)": attempt(lambda: connect(grpc_sock)),
    "sendmsg(datagram)": attempt(datagram),
}))
"""
# Codex 0.169.0's answers (observed with `codex sandbox`, both profiles), and shellgate's.
CODEX = {
    "socket(AF_UNIX)": "ok",
    "socket(AF_INET)": "errno 1",
    "socketpair()": "ok",
    "bind()": "errno 1",
    "connect(redis)": "errno 1",
    "connect(grpc)": "errno 1",
    # Codex lets a datagram reach a host's named datagram socket (syslog, journald, …).
    "sendmsg(datagram)": "ok",
}
EXPECTED = {**CODEX, "sendmsg(datagram)": "errno 1"}


@dataclass
class Host:
    """The host services a sandboxed command must not reach."""

    work: Path
    redis_sock: Path
    grpc_sock: Path
    dgram: socket.socket
    dgram_path: Path

    def argv(self) -> str:
        """The probe's command line."""
        return f"python3 probe.py {self.redis_sock} {self.grpc_sock} {self.dgram_path}"

    def redis(self, *args: str) -> str:
        """A redis-cli answer from outside the sandbox."""
        out = subprocess.run(["redis-cli", "-s", str(self.redis_sock), *args],
                             capture_output=True, text=True, timeout=10, check=True)  # fmt: skip
        return out.stdout.strip()

    def datagrams(self) -> list[bytes]:
        """Whatever reached the host's datagram socket."""
        got = []
        with contextlib.suppress(BlockingIOError):
            while True:
                got.append(self.dgram.recv(64))
        return got


@contextlib.contextmanager
def host_services(work: Path, sockets: Path) -> Iterator[Host]:
    """Redis and a gRPC server on unix sockets, a datagram socket; all in `sockets`."""
    assert REDIS_SERVER is not None
    redis_sock, grpc_sock, dgram_path = (sockets / n for n in ("redis.sock", "grpc.sock", "dg"))
    redis = subprocess.Popen(
        [REDIS_SERVER, "--port", "0", "--unixsocket", str(redis_sock), "--unixsocketperm", "700",
         "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    server = grpc.server(ThreadPoolExecutor(max_workers=2))
    health_pb2_grpc.add_HealthServicer_to_server(health.HealthServicer(), server)
    server.add_insecure_port(f"unix:{grpc_sock}")
    server.start()
    dgram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    dgram.bind(str(dgram_path))
    dgram.setblocking(False)
    try:
        with contextlib.suppress(AssertionError):  # as before: 10 s, then the tests say
            eventually(redis_sock.exists, "redis listening on its socket", 10)
        (work / "probe.py").write_text(PROBE)
        yield Host(work, redis_sock, grpc_sock, dgram, dgram_path)
    finally:
        dgram.close()
        server.stop(None)
        redis.terminate()
        redis.wait(10)


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Host]:
    """The services, and a workspace holding the probe."""
    with host_services(tmp_path, tmp_path) as services:
        yield services


def _execute(router: Router, host: Host, command: str, profile: int, env: str, call: str) -> str:
    """The model's text for `command` run under `profile` in environment `env` (never asks)."""
    never = common_pb2.APPROVAL_POLICY_KIND_NEVER
    request = router_pb2.ExecuteRequest(
        thread_id=f"t-{call}",
        turn=turn(profile=profile, cwd=str(host.work), environment_id=env, approval=never),
        item=function_item("exec_command", {"cmd": command}, call),
    )
    return completed(execute(router.stub, request)).output_text


def test_no_sandboxed_command_reaches_a_host_socket(host: Host) -> None:
    with router_with_daemon(host.work) as router:
        for env in ("local", "box"):
            for name, profile in PROFILES.items():
                text = _execute(router, host, host.argv(), profile, env, f"{env}-{name}")
                assert probe_answers(text) == EXPECTED, (env, name, text)
                # The attack as found: a forged approval written straight into Redis.
                attack = f"redis-cli -s {host.redis_sock} HSET {FORGED_KEY} decision approved"
                out = _execute(router, host, attack, profile, env, f"{env}-{name}-redis")
                assert "Operation not permitted" in out, out
    assert host.redis("EXISTS", FORGED_KEY) == "0"
    assert host.datagrams() == []
    assert not list(host.work.glob("probe-*.sock"))


def test_asyncio_and_socketpair_users_still_run(host: Host) -> None:
    # asyncio's event loop makes a socketpair for its self-pipe; it must keep working.
    script = "python3 -c 'import asyncio; print(asyncio.run(asyncio.sleep(0, \"loop-ok\")))'"
    with router_with_daemon(host.work) as router:
        for env in ("local", "box"):
            for name, profile in PROFILES.items():
                assert "loop-ok" in _execute(router, host, script, profile, env, f"a-{env}-{name}")


@pytest.mark.external
def test_every_answer_is_codex_sandboxs_own() -> None:
    codex = find_codex()
    if codex is None:
        pytest.skip("codex CLI not installed (npm i @openai/codex@0.169.0 into .tools)")
    if codex_version(codex) != CODEX_VERSION:
        pytest.skip(f"codex {codex_version(codex)} found; this test pins {CODEX_VERSION}")
    # Codex's sandbox helper refuses a temporary CODEX_HOME, and runs from a folder off /tmp.
    base = Path(tempfile.mkdtemp(prefix="sg-codex-sockets-", dir="/var/tmp"))
    try:
        (base / "home").mkdir()
        (base / "work").mkdir()
        with host_services(base / "work", base) as services:
            with running_router(router_config(local_cwd=str(services.work))) as router:
                for name, profile in PROFILES.items():
                    ours = probe_answers(
                        _execute(router, services, services.argv(), profile, "local", name)
                    )
                    home = str(base / "home")
                    ran = subprocess.run(
                        [str(codex), "sandbox", "-c", f'sandbox_mode="{name}"', "--",
                         *services.argv().split()],
                        cwd=services.work, env={**os.environ, "CODEX_HOME": home, "HOME": home},
                        capture_output=True, text=True, timeout=120,
                    )  # fmt: skip
                    theirs = probe_answers(ran.stdout)
                    assert theirs == CODEX, (name, ran.stdout, ran.stderr)
                    # The one difference is deliberate: shellgate refuses datagram sockets.
                    assert {k for k in CODEX if ours[k] != theirs[k]} == {"sendmsg(datagram)"}
                    assert ours == EXPECTED, name
            # Codex's datagrams arrived; none of ours did (EXPECTED above).
            assert services.datagrams() == [b"forged", b"forged"]
    finally:
        shutil.rmtree(base, ignore_errors=True)
