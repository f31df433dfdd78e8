"""The MCP front's copy of the Host/Origin rule answers like the shared one (common/http_guard)."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp", reason="the `mcp` extra is not installed")

from shellgate.client.mcp.host_guard import FrontHosts
from shellgate.common.http_guard import HostGuard

BINDS = [("127.0.0.1", ()), ("127.0.0.2", ()), ("::1", ()), ("[::1]", ()), ("localhost", ()),
         ("10.0.0.5", ("build.example",)), ("0.0.0.0", ("mcp.example", "10.0.0.7"))]  # fmt: skip
HOSTS = [
    None, "", "127.0.0.1:8080", "localhost:8080", "LOCALHOST:8080", "[::1]:8080",
    "127.0.0.2:8080", "[0:0:0:0:0:0:0:1]:8080", "localhost.:8080", "evil.example:8080",
    "127.0.0.1:9090", "127.0.0.1", "0x7f000001:8080", "2130706433:8080", "127.0.0.1:8080@evil",
    "::1:8080", "[::1:8080", "127.0.0.1:80800", "10.0.0.5:8080", "build.example:8080",
    "BUILD.example:8080", "mcp.example:8080", "10.0.0.7:8080", "0.0.0.0:8080", "a b:8080",
]  # fmt: skip
ORIGINS = [
    None, "null", "http://127.0.0.1:8080", "http://localhost:8080", "http://[::1]:8080",
    "http://localhost:9999", "http://evil.example", "https://127.0.0.1:8080",
    "http://127.0.0.1:8080/x", "file://", "http://127.0.0.1:bad", "http://build.example:8080",
    "http://mcp.example:8080", "http://127.0.0.2:8080",
]  # fmt: skip


@pytest.mark.parametrize(("bind", "names"), BINDS)
def test_the_copy_agrees_with_the_shared_rule(bind: str, names: tuple[str, ...]) -> None:
    shared = HostGuard.serving(bind, 8080, extra_names=names)
    copy = FrontHosts.serving(bind, 8080, names)
    for host in HOSTS:
        assert copy.host_allowed(host) == shared.host_allowed(host), (bind, host)
    for origin in ORIGINS:
        # The front speaks plain HTTP (no ws): the shared rule's `ws` origins do not apply.
        assert copy.origin_allowed(origin) == shared.origin_allowed(origin), (bind, origin)
