"""The rendered Kubernetes configuration run for real on loopback.

Redis starts with the rendered redis.conf and a password (as the StatefulSet's command
passes it), the router starts with the rendered router.toml — discovery-only, the Redis URL
read from a file as from the mounted Secret — with only what cannot exist here replaced:
addresses become loopback, TLS files go (plaintext loopback), the headless Service's name
becomes `localhost` and its port a real exec-server daemon's.
"""

from __future__ import annotations

import contextlib
import secrets
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from shellgate.router.service.config import parse_config
from shellgate.v1 import router_pb2

from tests.audit_keys import make_key
from tests.deploy.k8s_render import ROUTER, configmap_text, configmap_toml, redis_conf, rendered
from tests.execserver_harness import daemon_subprocess
from tests.integration.shared_support import REDIS_SERVER, free_port, wait_listening
from tests.router_harness import completed, function_item, running_router, turn
from tests.waiting import eventually

redis = pytest.importorskip("redis", reason="redis-py is needed (test extra)")
pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")


@contextlib.contextmanager
def rendered_redis(tmp_path: Path, password: str) -> Iterator[int]:
    """redis-server with the rendered redis.conf, on loopback, data in tmp_path; its port."""
    assert REDIS_SERVER is not None
    conf = tmp_path / "redis.conf"
    text = configmap_text(rendered("prod"), "shellgate-redis-config", "redis.conf")
    # redis-server changes into `dir` while reading the file: the data folder is the one
    # line replaced; later arguments override the address.
    assert "\ndir /data\n" in text
    conf.write_text(text.replace("\ndir /data\n", f"\ndir {tmp_path}\n"))
    port = free_port()
    proc = subprocess.Popen(
        [REDIS_SERVER, str(conf), "--port", str(port), "--bind", "127.0.0.1",
         "--requirepass", password],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_listening(proc, port, "redis-server")
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _loopback_router_data(tmp_path: Path, url_file: Path, daemon_port: int) -> dict[str, Any]:
    """The rendered router.toml with addresses, TLS and folders made local."""
    data = configmap_toml(rendered("prod"), ROUTER + "-config", "router.toml")
    assert data["local_environment"] is False and data["redis_url_file"]
    for key in ("tls_cert_file", "tls_key_file", "token_file", "health_listen"):
        data.pop(key)
    seal = tmp_path / "seal.key"
    seal.write_text(secrets.token_hex(32) + "\n")
    seal.chmod(0o600)
    assert data["shared_state_key_file"]
    # The audit log is signed as rendered; only the mounted paths move here.
    assert data["audit_key_file"] and data["audit_checkpoint_file"]
    audit_key, _public = make_key(tmp_path)
    data.update(
        listen="127.0.0.1:0", local_token=False, redis_url_file=str(url_file),
        shared_state_key_file=str(seal), audit_key_file=str(audit_key),
        audit_log=str(tmp_path / "audit.log"),
        audit_checkpoint_file=str(tmp_path / "audit.checkpoint"),
    )  # fmt: skip
    data["rules_dirs"] = [str(tmp_path / Path(d).name) for d in data["rules_dirs"]]
    for folder in data["rules_dirs"]:
        Path(folder).mkdir(exist_ok=True)
    data["limits"]["shutdown_grace_ms"] = 1_000
    [discovery] = data["discovery"]
    for key in ("tls_ca_file", "tls_cert_file", "tls_key_file", "tls_server_name"):
        discovery.pop(key)
    discovery.update(dns_name="localhost", port=daemon_port, refresh_interval_ms=200)
    return data


def test_rendered_redis_requires_the_password_and_keeps_an_aof(tmp_path: Path) -> None:
    password = secrets.token_hex(16)
    with rendered_redis(tmp_path, password) as port:
        # A raw PING without AUTH (redis-py would retry an authentication error).
        with socket.create_connection(("127.0.0.1", port), 5) as conn:
            conn.sendall(b"PING\r\n")
            assert conn.recv(200).startswith(b"-NOAUTH")
        client = redis.Redis(port=port, password=password)
        assert client.config_get("appendonly") == {"appendonly": "yes"}
        assert client.config_get("appendfsync") == {"appendfsync": "everysec"}
        assert client.config_get("maxmemory-policy") == {"maxmemory-policy": "noeviction"}
        client.set("k", "v")
        assert (tmp_path / redis_conf(rendered("prod"))["appenddirname"].strip('"')).is_dir()


def test_the_rendered_router_config_serves_discovered_daemons_with_state_in_redis(
    tmp_path: Path,
) -> None:
    password = secrets.token_hex(16)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    with rendered_redis(tmp_path, password) as redis_port, daemon_subprocess(
        ["--root", str(workspace)]
    ) as daemon:
        url_file = tmp_path / "url"
        url_file.write_text(f"redis://:{password}@127.0.0.1:{redis_port}/0\n")
        config = parse_config(_loopback_router_data(tmp_path, url_file, daemon.port))
        with running_router(config) as router:
            env_id = "build-127.0.0.1"
            found: dict[str, router_pb2.EnvironmentStatus] = {}

            def discovered() -> bool:
                listed = router.stub.ListEnvironments(router_pb2.ListEnvironmentsRequest(), timeout=5)
                found.clear()
                found.update({e.environment_id: e for e in listed.environments})
                return env_id in found and found[env_id].reachable

            eventually(
                discovered, lambda: f"{env_id} reachable; discovery found {sorted(found)}", 15, 0.1
            )
            assert "local" not in found
            args = {"cmd": "cat", "tty": True, "yield_time_ms": 300, "login": False}
            request = router_pb2.ExecuteRequest(
                thread_id="k8s-thread",
                turn=turn(environment_id=env_id, cwd=str(workspace)),
                item=function_item("exec_command", args, "c1"),
            )
            started = completed(list(router.stub.Execute(request, timeout=30)))
            assert started.HasField("session_id"), started.output_text
            # The remote session's owner record is in the shared store, under the prefix.
            client = redis.Redis(port=redis_port, password=password)
            keys = client.keys(f"{config.redis_key_prefix}*")
            assert keys, "nothing was written to Redis"
    # The rendered config's audit log verifies against the key's public half.
    verified = subprocess.run(
        [sys.executable, "-m", "shellgate.router.cli", "audit", "verify",
         "--key", str(tmp_path / "audit.key.pub"), str(tmp_path / "audit.log")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "signed" in verified.stdout + verified.stderr, verified.stdout + verified.stderr
