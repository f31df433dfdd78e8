"""Prometheus text metrics on an opt-in HTTP port; labels are bounded (never commands or ids).

Only three label kinds exist: the tool (one of the router's tools, else `other`), the
outcome (a termination reason) and the environment id (one of the configured ids, else
`other`), so the number of series is fixed by configuration, not by traffic.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import Counter
from collections.abc import Callable, Iterable

from shellgate.router.runtime.store.monitor import StoreMonitor

KNOWN_TOOLS = frozenset({"shell_command", "exec_command", "write_stdin", "apply_patch"})
# A request line plus headers larger than this is refused; the endpoint takes no body.
MAX_REQUEST_BYTES = 8 * 1024
READ_TIMEOUT_S = 5.0


class Metrics:
    """Thread-safe counters rendered as Prometheus text."""

    def __init__(self, environments: Iterable[str]) -> None:
        self._environments = frozenset(environments)
        self._lock = threading.Lock()
        self._calls: Counter[tuple[str, str, str]] = Counter()
        self._wall_sum: dict[str, float] = {}
        self._rejected: Counter[str] = Counter()
        self._shared_state: StoreMonitor | None = None

    def watch_shared_state(self, monitor: StoreMonitor) -> None:
        """Report the shared store's reachability, failures (by operation) and data losses."""
        self._shared_state = monitor

    def _tool(self, tool: str | None) -> str:
        return tool if tool in KNOWN_TOOLS else "other"

    def _env(self, environment_id: str | None) -> str:
        return environment_id if environment_id in self._environments else "other"

    def call_completed(
        self, tool: str | None, outcome: str, environment_id: str | None, wall_ms: int
    ) -> None:
        """Count one completed call."""
        key = (self._tool(tool), outcome, self._env(environment_id))
        with self._lock:
            self._calls[key] += 1
            self._wall_sum[key[0]] = self._wall_sum.get(key[0], 0.0) + wall_ms / 1000

    def rpc_rejected(self, code: str) -> None:
        """Count an RPC answered with an error status (code name only)."""
        with self._lock:
            self._rejected[code] += 1

    def render(self, extra_gauges: dict[str, float] | None = None) -> str:
        """The Prometheus text exposition."""
        lines = [
            "# HELP shellgate_calls_total Execute calls that reached `completed`.",
            "# TYPE shellgate_calls_total counter",
        ]
        with self._lock:
            for (tool, outcome, env), n in sorted(self._calls.items()):
                lines.append(
                    f'shellgate_calls_total{{tool="{tool}",outcome="{outcome}",'
                    f'environment="{env}"}} {n}'
                )
            lines += [
                "# HELP shellgate_call_wall_seconds_total Wall time of completed calls.",
                "# TYPE shellgate_call_wall_seconds_total counter",
            ]
            for tool, total in sorted(self._wall_sum.items()):
                lines.append(f'shellgate_call_wall_seconds_total{{tool="{tool}"}} {total:.6f}')
            lines += [
                "# HELP shellgate_rpc_errors_total RPCs answered with an error status.",
                "# TYPE shellgate_rpc_errors_total counter",
            ]
            for code, n in sorted(self._rejected.items()):
                lines.append(f'shellgate_rpc_errors_total{{code="{code}"}} {n}')
        lines += self._shared_state_lines()
        for name, value in sorted((extra_gauges or {}).items()):
            lines += [f"# TYPE {name} gauge", f"{name} {value}"]
        return "\n".join(lines) + "\n"

    def _shared_state_lines(self) -> list[str]:
        # The monitor is only touched on the event loop, like this render; `op` is one of
        # the store's fixed operation names, so the series are bounded.
        monitor = self._shared_state
        if monitor is None:
            return []
        lines = [
            "# HELP shellgate_shared_state_up 1 while the shared store (Redis) answers.",
            "# TYPE shellgate_shared_state_up gauge",
            f"shellgate_shared_state_up {int(monitor.up)}",
            "# HELP shellgate_shared_state_errors_total Failed shared-store operations.",
            "# TYPE shellgate_shared_state_errors_total counter",
        ]
        for op, n in sorted(monitor.errors.items()):
            lines.append(f'shellgate_shared_state_errors_total{{op="{op}"}} {n}')
        lines += [
            "# HELP shellgate_shared_state_resets_total Times the store was found to have "
            "lost its data.",
            "# TYPE shellgate_shared_state_resets_total counter",
            f"shellgate_shared_state_resets_total {monitor.resets}",
        ]
        return lines


async def _handle(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, render: Callable[[], str]
) -> None:
    try:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), READ_TIMEOUT_S)
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
        writer.close()
        return
    request_line = head.split(b"\r\n", 1)[0].split()
    if len(request_line) >= 2 and request_line[0] == b"GET" and request_line[1] == b"/metrics":
        body = render().encode()
        status = b"200 OK"
        ctype = b"text/plain; version=0.0.4"
    else:
        body, status, ctype = b"not found\n", b"404 Not Found", b"text/plain"
    writer.write(
        b"HTTP/1.1 " + status + b"\r\nContent-Type: " + ctype
        + b"\r\nContent-Length: " + str(len(body)).encode()
        + b"\r\nConnection: close\r\n\r\n" + body
    )  # fmt: skip
    with contextlib.suppress(ConnectionError):
        await writer.drain()
    writer.close()


async def start_metrics_server(listen: str, render: Callable[[], str]) -> asyncio.AbstractServer:
    """Serve `GET /metrics` on host:port (the caller checks the address is allowed)."""
    host, _, port = listen.rpartition(":")
    return await asyncio.start_server(
        lambda r, w: _handle(r, w, render),
        host.strip("[]"),
        int(port),
        limit=MAX_REQUEST_BYTES,
    )
