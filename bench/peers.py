"""The servers under test, started once per run on loopback and shared by every bench."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import tempfile
from pathlib import Path
from typing import Any

from bench import procs

REPO = Path(__file__).resolve().parent.parent
# Where scripts/setup-test.sh installs the npm peers (@openai/codex@0.169.0).
CODEX_BIN = REPO / ".tools/node_modules/.bin/codex"

# The daemon counts retained (exited, kept 30 s for Attach) processes against
# max_processes_per_caller (64 by default), so a default daemon refuses the 65th short
# command within 30 s. The bench raises both caps; everything else stays default.
DAEMON_TOML = """\
max_processes_per_caller = 20000
max_processes_total = 20000
"""


def codex_binary() -> str | None:
    """Path of the Codex CLI (repo tools, then PATH), or None."""
    if CODEX_BIN.exists():
        return str(CODEX_BIN)
    return shutil.which("codex")


def codex_available() -> str | None:
    """None when the Codex peer can run, else why not (binary or websockets missing)."""
    if codex_binary() is None:
        return "codex CLI not found (scripts/setup-test.sh installs it under .tools/)"
    try:
        import websockets  # noqa: F401
    except ImportError:
        return "python package `websockets` not installed (pip install websockets)"
    return None


def swerex_available() -> bool:
    """True when the SWE-ReX server entry point is importable."""
    try:
        import swerex.server  # noqa: F401
    except ImportError:
        return False
    return True


def router_available() -> bool:
    """True when the router servicer exists in this checkout."""
    return (REPO / "server/shellgate/router/service/wire/servicer.py").exists()


class Peers:
    """Lazily started peers; `close` stops every one of them."""

    def __init__(self, home: str, tree: Path | None = None) -> None:
        self.home = home
        # Another checkout whose shellgate the daemons and routers run (`--compare REF`);
        # None runs this one.
        self._tree_path = procs.tree_pythonpath(tree) if tree is not None else None
        self.env = procs.clean_env(home)
        self._stack = contextlib.ExitStack()
        self._astack = contextlib.AsyncExitStack()
        self._servers: dict[str, procs.Server] = {}
        self._clients: dict[str, Any] = {}
        self._codex_front_url = ""
        # The Project door of `router()` (project_listen), once started; "" = none.
        self.door_address = ""
        self.tmp = tempfile.mkdtemp(prefix="sg-bench-")
        self._stack.callback(shutil.rmtree, self.tmp, True)

    def daemon(self, name: str = "daemon") -> procs.Server:
        """`shellgate-execserver serve --listen 127.0.0.1:0` (caps raised, see DAEMON_TOML).

        Memory benches ask for their own `name` so they start from a fresh daemon.
        """
        if name not in self._servers:
            cfg = Path(self.tmp) / "daemon.toml"
            cfg.write_text(DAEMON_TOML)
            argv = [
                procs.python(),
                "-m",
                "shellgate.execserver.cli",
                "serve",
                "--no-local-token",
                "--config",
                str(cfg),
                "--listen",
                "127.0.0.1:0",
                "--print-port",
                "--root",
                self.home,
            ]
            env = self._server_env()
            self._servers[name] = self._stack.enter_context(procs.serve(argv, env=env))
        return self._servers[name]

    def _server_env(self) -> dict[str, str]:
        env = {**os.environ, "HOME": self.home}
        if self._tree_path is not None:
            env["PYTHONPATH"] = self._tree_path
        return env

    def codex_front(self) -> str:
        """A second daemon (same config) also speaking Codex's protocol; its ws:// URL.

        Same client, same protocol as the `codex` peer: the apples-to-apples pair.
        """
        if "codex_front" not in self._servers:
            cfg = Path(self.tmp) / "daemon.toml"
            cfg.write_text(DAEMON_TOML)
            port = procs.free_port()
            argv = [
                procs.python(), "-m", "shellgate.execserver.cli", "serve", "--no-local-token",
                "--config", str(cfg), "--listen", "127.0.0.1:0", "--print-port",
                "--root", self.home, "--codex-listen", f"ws://127.0.0.1:{port}",
            ]  # fmt: skip
            env = {**os.environ, "HOME": self.home}
            self._servers["codex_front"] = self._stack.enter_context(procs.serve(argv, env=env))
            self._codex_front_url = f"ws://127.0.0.1:{port}"
        return self._codex_front_url

    def stop(self, name: str) -> None:
        """Forget a server (it is still stopped at close); used after a memory bench."""
        server = self._servers.pop(name, None)
        if server is not None:
            procs.stop(server.proc)

    def codex(self) -> procs.Server:
        """`codex exec-server --listen ws://127.0.0.1:0` with a clean CODEX_HOME."""
        if "codex" not in self._servers:
            binary = codex_binary()
            if binary is None:
                raise RuntimeError("codex CLI not found")
            codex_home = Path(self.home) / ".codex"
            codex_home.mkdir(exist_ok=True)
            # Requests on one connection are handled one at a time by default; allow as many
            # as the concurrency bench issues so Codex is not serialised by our client.
            argv = [
                binary,
                "exec-server",
                "--listen",
                "ws://127.0.0.1:0",
                "--concurrent-requests",
                "64",
            ]
            env = {**self.env, "CODEX_HOME": str(codex_home)}
            self._servers["codex"] = self._stack.enter_context(
                procs.serve(argv, env=env, parse="url")
            )
        return self._servers["codex"]

    def swerex(self) -> tuple[procs.Server, str]:
        """`swerex-remote` (SWE-ReX's FastAPI server) on a loopback port, and its token."""
        if "swerex" not in self._servers:
            port = procs.free_port()
            token = secrets.token_hex(8)
            argv = [
                procs.python(),
                "-m",
                "swerex.server",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--auth-token",
                token,
            ]
            server = self._stack.enter_context(_no_banner(argv, self.env, port))
            procs.wait_http(port, "/")
            self._servers["swerex"] = server
            self._clients["swerex-token"] = token
        return self._servers["swerex"], self._clients["swerex-token"]

    def router(self) -> procs.Server:
        """`shellgate serve --listen 127.0.0.1:0 --print-port` (pinned only by the Project
        bench); this checkout's router also opens its Project door (`door_address`)."""
        if "router" not in self._servers:
            argv = [
                procs.python(),
                "-m",
                "shellgate.router.cli.main",
                "serve",
                "--no-local-token",
                "--listen",
                "127.0.0.1:0",
                "--print-port",
            ]
            if self._tree_path is None:  # another commit (--compare) may have no door
                self.door_address = f"127.0.0.1:{procs.free_port()}"
                argv += ["--project-listen", self.door_address]
            env = self._server_env()
            self._servers["router"] = self._stack.enter_context(
                procs.serve(argv, env=env, cwd=self.home)
            )
        return self._servers["router"]

    def floor(self) -> procs.Server:
        """`python -m bench.floor_server` (not pinned): the grpc-aio floor, see its docstring."""
        if "floor" not in self._servers:
            argv = [procs.python(), "-m", "bench.floor_server", "--listen", "127.0.0.1:0",
                    "--print-port"]  # fmt: skip
            # Started in HOME like the router (whose environment its Execute children get);
            # the repository goes on the path so `bench` imports from there.
            path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
            env = {**os.environ, "HOME": self.home, "PYTHONPATH": path}
            self._servers["floor"] = self._stack.enter_context(
                procs.serve(argv, env=env, cwd=self.home)
            )
        return self._servers["floor"]

    REMOTE_ENVIRONMENT = "remote"

    def router_remote(self) -> procs.Server:
        """A second router whose only environment is the bench daemon (router → daemon)."""
        if "router_remote" not in self._servers:
            cfg = Path(self.tmp) / "router-remote.toml"
            cfg.write_text(
                "local_environment = false\n[[environments]]\n"
                f'id = "{self.REMOTE_ENVIRONMENT}"\ntarget = "{self.daemon().address}"\n'
                "insecure = true\n"
            )
            argv = [procs.python(), "-m", "shellgate.router.cli.main", "serve",
                    "--no-local-token", "--config", str(cfg), "--listen", "127.0.0.1:0",
                    "--print-port"]  # fmt: skip
            env = self._server_env()
            self._servers["router_remote"] = self._stack.enter_context(
                procs.serve(argv, env=env, cwd=self.home)
            )
        return self._servers["router_remote"]

    async def enter_async(self, cm: Any) -> Any:
        """Keep an async context (a channel, a websocket) open until close."""
        return await self._astack.enter_async_context(cm)

    async def aclose(self) -> None:
        """Close clients, then stop every server."""
        try:
            await self._astack.aclose()
        finally:
            self._stack.close()


@contextlib.contextmanager
def _no_banner(argv: list[str], env: dict[str, str], port: int) -> Any:
    # uvicorn prints nothing on stdout; wrap so the startup line reader gets the port.
    wrapper = ["sh", "-c", f'echo {port}; exec "$@"', "sh", *argv]
    with procs.serve(wrapper, env=env) as server:
        yield server
