"""`network_access` as Codex 0.169 governs it: workspace-write's flag opens the network.

Codex 0.169.0, observed with `codex sandbox -c sandbox_mode=… -c
sandbox_workspace_write.network_access=…` (and its seccomp filter read back from a running
command): with the network on the command shares the host's network (no `--unshare-net`)
and its filter refuses only io_uring and `AF_VSOCK` sockets; with it off (the default, and
always under read-only, where the flag is not a key) it gets an empty network namespace and
the Restricted filter (tests/integration/test_sandbox_sockets.py). Each probe runs through a
real router's Execute with a TurnContext permission profile, in its embedded environment
and on a real `shellgate-execserver` daemon; the last test compares every answer with
`codex sandbox` itself when the npm codex is installed. With the network on the credential
masks still hold: a command that can reach the router cannot read its token.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from shellgate.common.local_token import runtime_dir, token_path
from shellgate.common.sandbox import sandbox_unavailable_reason
from shellgate.router.runtime.environments.remote.config import DialSettings, RemoteConfig
from shellgate.v1 import common_pb2, router_pb2, router_pb2_grpc

from tests.execserver_harness import daemon_subprocess
from tests.integration.codex_harness import (
    CODEX_VERSION,
    ScriptedResponses,
    codex_env,
    codex_version,
    find_codex,
    write_config,
)
from tests.integration.sandbox_support import probe_answers, router_with_daemon
from tests.integration.test_codex_exec_server import (
    _outputs,
    _remote,
    _scripted,
    _start,
    _stop,
    _text,
    ws_daemon,
)
from tests.router_harness import (
    Router,
    completed,
    execute,
    function_item,
    router_config,
    router_subprocess,
    running_router,
    turn,
)

pytestmark = [
    pytest.mark.sandbox,
    pytest.mark.skipif(bool(sandbox_unavailable_reason()), reason="no bubblewrap sandbox"),
]
READ_ONLY = common_pb2.PERMISSION_PROFILE_KIND_READ_ONLY
WORKSPACE_WRITE = common_pb2.PERMISSION_PROFILE_KIND_WORKSPACE_WRITE


@dataclass(frozen=True)
class Row:
    """One profile as a TurnContext says it and as `codex sandbox` is told it."""

    kind: int
    network_access: bool | None
    codex_args: tuple[str, ...]

    def profile(self) -> common_pb2.PermissionProfile:
        """The TurnContext's permission profile."""
        profile = common_pb2.PermissionProfile(kind=self.kind)
        if self.network_access is not None:
            profile.network_access = self.network_access
        return profile


_WW, _NET = 'sandbox_mode="workspace-write"', "sandbox_workspace_write.network_access"
ROWS = {
    "workspace-write, network on": Row(WORKSPACE_WRITE, True, (_WW, f"{_NET}=true")),
    "workspace-write, network off": Row(WORKSPACE_WRITE, False, (_WW, f"{_NET}=false")),
    "workspace-write, unset": Row(WORKSPACE_WRITE, None, (_WW,)),
    "read-only": Row(READ_ONLY, None, ('sandbox_mode="read-only"',)),
    # Codex's flag belongs to workspace-write: read-only stays off with it set.
    "read-only, network flag on": Row(
        READ_ONLY, True, ('sandbox_mode="read-only"', f"{_NET}=true")
    ),
}

# The one-liner and what Codex 0.169.0 prints for it.
ONE_LINER = "python3 -c 'import socket; socket.socket(); print(\"socket ok\")'"
SOCKET_OK, SOCKET_EPERM = "socket ok", "PermissionError: [Errno 1] Operation not permitted"

PROBE = r"""
import ctypes, json, os, platform, socket, sys

port, unix_path = int(sys.argv[1]), sys.argv[2]
libc = ctypes.CDLL(None, use_errno=True)


def attempt(action):
    try:
        got = action()
        return "ok" if got is None else got
    except OSError as exc:
        return f"errno {exc.errno}"


def tcp():
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"ping")
        return "ok " + s.recv(16).decode()


def unix():
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(unix_path)
        s.sendall(b"ping")
        return "ok " + s.recv(16).decode()


def ptrace():
    pid = os.fork()
    if pid == 0:  # PTRACE_TRACEME in a child: no tracer appears, nothing is stopped
        os._exit(0 if libc.ptrace(0, 0, 0, 0) == 0 else ctypes.get_errno())
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    return "ok" if code == 0 else f"errno {code}"


def io_uring():
    assert platform.machine() in ("x86_64", "aarch64")  # io_uring_setup is 425 on both
    params = ctypes.create_string_buffer(120)
    fd = libc.syscall(425, 1, params)
    if fd < 0:
        return f"errno {ctypes.get_errno()}"
    os.close(fd)
    return "ok"


print("PROBE " + json.dumps({
    "socket(AF_INET)": attempt(lambda: socket.socket().close()),
    "connect(loopback TCP)": attempt(tcp),
    "connect(host AF_UNIX)": attempt(unix),
    "socket(AF_VSOCK)": attempt(lambda: socket.socket(socket.AF_VSOCK).close()),
    "io_uring_setup": attempt(io_uring),
    "ptrace(TRACEME)": attempt(ptrace),
    "CODEX_SANDBOX_NETWORK_DISABLED": os.environ.get("CODEX_SANDBOX_NETWORK_DISABLED"),
}))
"""
# Codex 0.169.0's answers (observed with `codex sandbox`); shellgate's must be the same.
NETWORK_ON = {
    "socket(AF_INET)": "ok",
    "connect(loopback TCP)": "ok pong",
    "connect(host AF_UNIX)": "ok pong",
    "socket(AF_VSOCK)": "errno 1",
    "io_uring_setup": "errno 1",
    "ptrace(TRACEME)": "ok",
    "CODEX_SANDBOX_NETWORK_DISABLED": None,
}
NETWORK_OFF = {
    "socket(AF_INET)": "errno 1",
    "connect(loopback TCP)": "errno 1",
    "connect(host AF_UNIX)": "errno 1",
    "socket(AF_VSOCK)": "errno 1",
    "io_uring_setup": "errno 1",
    "ptrace(TRACEME)": "errno 1",
    "CODEX_SANDBOX_NETWORK_DISABLED": "1",
}
EXPECTED = {name: NETWORK_ON if name.endswith("network on") else NETWORK_OFF for name in ROWS}


@dataclass
class Host:
    """The workspace holding the probe, and the host's listeners it tries to reach."""

    work: Path
    port: int
    unix_path: Path
    accepted: list[str]

    def argv(self) -> str:
        """The probe's command line."""
        return f"python3 probe.py {self.port} {self.unix_path}"


def _serve(listener: socket.socket, name: str, accepted: list[str]) -> None:
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        with conn:
            if conn.recv(16) == b"ping":
                conn.sendall(b"pong")
                accepted.append(name)


@contextlib.contextmanager
def host_listeners(work: Path, sockets: Path) -> Iterator[Host]:
    """A loopback TCP server and a unix socket server (in `sockets`) answering ping."""
    accepted: list[str] = []
    tcp = socket.create_server(("127.0.0.1", 0))
    unix_path = sockets / "host.sock"
    unix = socket.socket(socket.AF_UNIX)
    unix.bind(str(unix_path))
    unix.listen()
    threads = [threading.Thread(target=_serve, args=(s, n, accepted), daemon=True)
               for s, n in ((tcp, "tcp"), (unix, "unix"))]  # fmt: skip
    for thread in threads:
        thread.start()
    (work / "probe.py").write_text(PROBE)
    try:
        yield Host(work, tcp.getsockname()[1], unix_path, accepted)
    finally:
        for listener in (tcp, unix):
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        for thread in threads:
            thread.join(5)


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Host]:
    """The listeners, and a workspace holding the probe."""
    (tmp_path / "work").mkdir()
    with host_listeners(tmp_path / "work", tmp_path) as listeners:
        yield listeners


def _request(command: str, row: Row, cwd: Path, env: str, call: str) -> router_pb2.ExecuteRequest:
    never = common_pb2.APPROVAL_POLICY_KIND_NEVER
    ctx = turn(cwd=str(cwd), environment_id=env, approval=never)
    ctx.permission_profile.CopyFrom(row.profile())
    return router_pb2.ExecuteRequest(
        thread_id=f"t-{call}-{uuid.uuid4().hex[:6]}", turn=ctx,
        item=function_item("exec_command", {"cmd": command}, call),
    )  # fmt: skip


def _execute(router: Router, command: str, row: Row, cwd: Path, env: str) -> str:
    """The model's text for `command` under `row` in environment `env` (never asks)."""
    return completed(execute(router.stub, _request(command, row, cwd, env, "c1"))).output_text


def _socket_answer(text: str) -> str:
    """What the one-liner printed: `socket ok` or its exception line."""
    for answer in (SOCKET_OK, SOCKET_EPERM):
        if answer in text:
            return answer
    raise AssertionError(text)


def test_network_access_is_honoured_locally_and_on_a_daemon(host: Host) -> None:
    with router_with_daemon(host.work) as router:
        for env in ("local", "box"):
            for name, row in ROWS.items():
                on = EXPECTED[name] is NETWORK_ON
                text = _execute(router, ONE_LINER, row, host.work, env)
                assert _socket_answer(text) == (SOCKET_OK if on else SOCKET_EPERM), (env, name)
                probe = probe_answers(_execute(router, host.argv(), row, host.work, env))
                assert probe == EXPECTED[name], (env, name, probe)
    # Only the network-on probes reached the listeners: two environments, one row.
    assert sorted(host.accepted) == ["tcp", "tcp", "unix", "unix"]


def test_network_on_still_masks_the_generated_tokens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command that can reach the router and the daemon reads neither's token."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "xdg"))
    work = tmp_path / "work"
    work.mkdir()
    (work / "visible.txt").write_text("visible-file-reads-fine\n")
    row = ROWS["workspace-write, network on"]
    with (
        daemon_subprocess(["--root", str(work)], local_token=True) as daemon,
        router_subprocess(local_token=True) as (_, port),
    ):
        router_file, daemon_file = token_path("router", port), token_path("execserver", daemon.port)
        router_token, daemon_token = (p.read_text().strip() for p in (router_file, daemon_file))
        # Read each token, then reach both services over TCP: the network is on.
        reach = (f"import socket\nfor p in ({port}, {daemon.port}):\n"
                 "    socket.create_connection(('127.0.0.1', p), timeout=10).close()\n"
                 "print('reached both')")  # fmt: skip
        command = (f"cat {router_file} {daemon_file} visible.txt; "
                   f"echo entries=$(ls -A {runtime_dir()} | wc -l); python3 -c \"{reach}\"")  # fmt: skip
        metadata = (("authorization", f"Bearer {router_token}"),)
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = router_pb2_grpc.ToolRouterServiceStub(channel)
            request = _request(command, row, work, "local", "mask")
            text = completed(list(stub.Execute(request, timeout=60, metadata=metadata))).output_text
        assert "reached both" in text and "visible-file-reads-fine" in text, text
        assert "entries=0" in text, text
        assert router_token not in text and daemon_token not in text, text
        # On the daemon (its own sandbox, its own masks), through a router holding its token.
        dial = DialSettings(insecure=True, token_file=str(daemon_file))
        box = RemoteConfig("box", daemon.target, dial=dial)
        with running_router(router_config(local_cwd=str(work), environments=(box,))) as router:
            text = _execute(router, command, row, work, "box")
        assert "reached both" in text and "visible-file-reads-fine" in text, text
        assert "entries=0" in text, text
        assert router_token not in text and daemon_token not in text, text


def _pinned_codex() -> Path:
    codex = find_codex()
    if codex is None:
        pytest.skip("codex CLI not installed (npm i @openai/codex@0.169.0 into .tools)")
    if codex_version(codex) != CODEX_VERSION:
        pytest.skip(f"codex {codex_version(codex)} found; this test pins {CODEX_VERSION}")
    return codex


@pytest.mark.external
def test_every_answer_is_codex_sandboxs_own() -> None:
    codex = _pinned_codex()
    # Codex's sandbox helper refuses a temporary CODEX_HOME, and runs from a folder off /tmp.
    base = Path(tempfile.mkdtemp(prefix="sg-codex-network-", dir="/var/tmp"))
    try:
        (base / "home").mkdir()
        (base / "work").mkdir()
        home = str(base / "home")
        env = {**os.environ, "CODEX_HOME": home, "HOME": home}
        with (
            host_listeners(base / "work", base) as services,
            running_router(router_config(local_cwd=str(services.work))) as router,
        ):
            for name, row in ROWS.items():
                on = EXPECTED[name] is NETWORK_ON

                def both(command: str, row: Row = row) -> tuple[str, str]:
                    config = [a for arg in row.codex_args for a in ("-c", arg)]
                    ran = subprocess.run(
                        [str(codex), "sandbox", *config, "--", "bash", "-c", command],
                        cwd=services.work, env=env, capture_output=True, text=True, timeout=120,
                    )  # fmt: skip
                    ours = _execute(router, command, row, services.work, "local")
                    return ran.stdout + ran.stderr, ours

                theirs, ours = both(ONE_LINER)
                assert _socket_answer(theirs) == (SOCKET_OK if on else SOCKET_EPERM), name
                assert _socket_answer(ours) == _socket_answer(theirs), (name, ours)
                theirs, ours = both(services.argv())
                assert probe_answers(theirs) == EXPECTED[name], (name, theirs)
                assert probe_answers(ours) == probe_answers(theirs), (name, ours)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _codex_turn(codex: Path, environments_toml: str, command: str) -> str:
    """One `codex exec` turn (workspace-write, network on) running `command`; its output."""
    root = Path(tempfile.mkdtemp(prefix="codex-net-"))
    home, cwd = root / "home", root / "work"
    cwd.mkdir(parents=True)
    server = ScriptedResponses(_scripted([("exec_command", {"cmd": command})]))
    try:
        config = ('approval_policy = "never"\nsandbox_mode = "workspace-write"\n'
                  "[sandbox_workspace_write]\nnetwork_access = true\n")  # fmt: skip
        write_config(home, server.port, config, model="gpt-5.5")
        (home / "environments.toml").write_text(environments_toml, encoding="utf-8")
        done = subprocess.run(
            [str(codex), "exec", "--skip-git-repo-check", "-C", str(cwd), "run the script"],
            env=codex_env(home), capture_output=True, text=True, timeout=120,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-4000:]
        (output,) = _outputs(server.bodies[-1])
        return _text(output)
    finally:
        server.close()
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.external
def test_codex_protocol_network_on_equals_codex_exec_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Codex 0.169 sends `network: "enabled"` in process/start's sandbox when the network is
    on; shellgate-execserver's sandbox then answers as Codex's own exec-server does."""
    codex = _pinned_codex()
    # Codex's own exec-server cannot start sandboxed commands with its HOME under /tmp
    # (tests/integration/test_codex_sandbox_conformance.py); both daemons get one off it.
    base = Path(tempfile.mkdtemp(prefix="sg-codex-network-", dir="/var/tmp"))
    monkeypatch.setenv("HOME", str(base / "home"))
    (base / "home").mkdir()
    (base / "probe").mkdir()
    try:
        with host_listeners(base / "probe", base) as services:
            command = f"cd {services.work} && {services.argv()}"
            proc, (url,) = _start([str(codex), "exec-server", "--listen", "ws://127.0.0.1:0"], 1)
            try:
                theirs = probe_answers(_codex_turn(codex, _remote(url=url), command))
            finally:
                _stop(proc)
            with ws_daemon() as (ours_url, token):
                environment = _remote(url=ours_url, auth_bearer_token=token)
                ours = probe_answers(_codex_turn(codex, environment, command))
        assert theirs == NETWORK_ON, theirs
        assert ours == theirs
    finally:
        shutil.rmtree(base, ignore_errors=True)
