"""Helpers for the shared-state tests: a loopback redis-server, and routers using it.

Routers are the production ones (`redis_url` in the config) via tests/router_harness.py.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from shellgate.router.runtime.store.record_seal import RecordSeal
from shellgate.router.service.config import RouterConfig

from tests.router_harness import Router, running_router
from tests.waiting import eventually

REDIS_SERVER = shutil.which("redis-server") or (
    "/usr/bin/redis-server" if shutil.which("/usr/bin/redis-server") else None
)


def free_port() -> int:
    """A free loopback TCP port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_listening(proc: subprocess.Popen[bytes], port: int, name: str) -> None:
    """Wait (≤ 10 s) until `proc` accepts TCP on loopback `port`; RuntimeError if it died."""

    def accepts() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} did not start (exited {proc.returncode})")
        with socket.create_connection(("127.0.0.1", port), 0.2):
            return True

    try:
        eventually(accepts, f"{name} listening on {port}", 10, ignoring=(OSError,))
    except AssertionError as exc:
        raise RuntimeError(f"{name} did not start: {exc}") from None


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    """A throwaway redis-server on loopback (no persistence); yields its URL."""
    assert REDIS_SERVER is not None
    port = free_port()
    proc = subprocess.Popen(
        [REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--protected-mode", "yes"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_listening(proc, port, "redis-server")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# The replicas' seal key (shared_state_key_file): one per test run, as a fleet shares one.
_SEAL_DIR = Path(tempfile.mkdtemp(prefix="shellgate-seal-"))
SEAL_KEY = "test-seal-key-" + "0123456789abcdef" * 2


TEST_SEAL = RecordSeal(SEAL_KEY.encode())


def seal_key_file(folder: Path | None = None) -> Path:
    """A 0600 `shared_state_key_file` in `folder` (default: the run's shared one)."""
    path = (folder or _SEAL_DIR) / "seal.key"
    if not path.exists():
        path.write_text(SEAL_KEY + "\n")
        path.chmod(0o600)
    return path


@contextlib.contextmanager
def shared_router(config: RouterConfig, redis_url: str) -> Iterator[Router]:
    """A real router whose thread state lives in Redis (`redis_url`)."""
    shared = replace(config, redis_url=redis_url, shared_state_key_file=str(seal_key_file()))
    with running_router(shared) as router:
        yield router
