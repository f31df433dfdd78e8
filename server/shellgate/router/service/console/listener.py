"""The console listener: uvicorn on the router's own event loop, owned and stopped with it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from shellgate.common.grpc.listen import split_listen
from shellgate.common.tasks import cancel_and_wait
from shellgate.router.service.config import ConfigError

if TYPE_CHECKING:
    import uvicorn
    from shellgate.router.service.app import RouterApp
    from shellgate.router.service.console.web import Console

__all__ = ["ConsoleListener", "start_console"]

log = logging.getLogger(__name__)
# Open streams and requests get this long to end at shutdown before they are cut.
SHUTDOWN_GRACE_S = 1
# uvicorn's start on a bound socket takes milliseconds; give up after ~10 s.
STARTUP_POLLS = 1_000
EXTRA_HINT = "pip install 'shellgate[console]'"


def _server_class() -> type[uvicorn.Server]:
    import uvicorn

    class EmbeddedServer(uvicorn.Server):
        """uvicorn inside the router: the router owns SIGTERM/SIGINT, not uvicorn."""

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    return EmbeddedServer


@dataclass
class ConsoleListener:
    """A serving console: its bound port, the uvicorn server and the task running it."""

    console: Console
    server: uvicorn.Server
    task: asyncio.Task[None]
    port: int

    async def stop(self) -> None:
        """End live streams, stop accepting, let requests finish (bounded), close."""
        self.console.closing.set()
        self.server.should_exit = True
        try:
            await asyncio.wait_for(asyncio.shield(self.task), SHUTDOWN_GRACE_S + 2)
        except TimeoutError:
            await cancel_and_wait(self.task, log=log)


def _bind(listen: str) -> socket.socket:
    host, port = split_listen(listen)
    host = host.strip("[]")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


async def start_console(app: RouterApp) -> ConsoleListener:
    """Bind `console_listen` and serve the console (ConfigError when the extra is missing)."""
    config = app.config
    try:
        import jinja2  # noqa: F401
        import python_multipart  # noqa: F401  (Starlette's form parser)
        import starlette  # noqa: F401
        import uvicorn
    except ImportError as exc:
        raise ConfigError(
            "console_listen", f"the console needs its extra ({exc.name} is missing): {EXTRA_HINT}"
        ) from exc
    from shellgate.router.service.console.web import Console

    sock = _bind(config.console_listen)
    # Built for the bound port: its Host/Origin rule names it (`console_listen` may be :0).
    console = Console(app, tls=config.console_tls, port=sock.getsockname()[1])
    uv_config = uvicorn.Config(
        console.asgi,
        log_config=None,
        access_log=False,
        lifespan="off",
        server_header=False,
        timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
        proxy_headers=False,
        ssl_certfile=config.console_tls_cert_file or None,
        ssl_keyfile=config.console_tls_key_file or None,
    )
    server = _server_class()(uv_config)
    # Owned by the ConsoleListener: stop() ends it (RunningRouter.stop calls that).
    task = asyncio.create_task(server.serve(sockets=[sock]), name="console")
    for _ in range(STARTUP_POLLS):
        if server.started or task.done():
            break
        await asyncio.sleep(0.01)
    if not server.started:
        sock.close()
        if task.done():
            task.result()
        await cancel_and_wait(task, log=log)
        raise RuntimeError("the console listener did not start")
    port = sock.getsockname()[1]
    scheme = "https" if config.console_tls else "http"
    log.info(
        "console listening on %s://%s", scheme, f"{config.console_listen.rpartition(':')[0]}:{port}"
    )
    return ConsoleListener(console, server, task, port)
