"""The Host/Origin rule every browser-reachable listener applies (common/http_guard)."""

from __future__ import annotations

import pytest
from shellgate.common.http_guard import HostGuard, split_host_header

LOOPBACK = HostGuard.serving("127.0.0.1", 8080)


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1:8080", "localhost:8080", "LOCALHOST:8080", "[::1]:8080", "127.0.0.2:8080",
     "[0:0:0:0:0:0:0:1]:8080", "localhost.:8080"],
)  # fmt: skip
def test_every_loopback_spelling_on_the_own_port_passes(host: str) -> None:
    assert LOOPBACK.host_allowed(host)


@pytest.mark.parametrize(
    "host",
    [None, "", "evil.example:8080", "rebind.test:8080", "127.0.0.1:9090", "127.0.0.1",
     "0x7f000001:8080", "2130706433:8080", "127.0.0.1:8080@evil", "::1:8080", "[::1:8080",
     "127.0.0.1:80800"],
)  # fmt: skip
def test_foreign_or_malformed_hosts_are_refused(host: str | None) -> None:
    assert not LOOPBACK.host_allowed(host)
    assert LOOPBACK.refusal(host, None)


def test_configured_names_pass_and_a_non_loopback_bind_is_only_its_names() -> None:
    guard = HostGuard.serving("10.0.0.5", 443, extra_names=("build.example",), tls=True)
    assert guard.host_allowed("build.example")  # default https port
    assert guard.host_allowed("10.0.0.5:443")
    assert not guard.host_allowed("localhost:443")
    assert guard.origin_allowed("https://build.example")
    assert not guard.origin_allowed("http://build.example:443")


@pytest.mark.parametrize(
    "origin", [None, "http://127.0.0.1:8080", "http://localhost:8080", "ws://[::1]:8080"]
)
def test_own_or_absent_origins_pass(origin: str | None) -> None:
    assert LOOPBACK.origin_allowed(origin)


@pytest.mark.parametrize(
    "origin",
    ["null", "http://localhost:9999", "http://evil.example", "https://127.0.0.1:8080",
     "http://127.0.0.1:8080/x", "file://", "http://127.0.0.1:bad"],
)  # fmt: skip
def test_foreign_origins_are_refused(origin: str) -> None:
    assert not LOOPBACK.origin_allowed(origin)
    assert LOOPBACK.refusal("127.0.0.1:8080", origin)


def test_split_host_header() -> None:
    assert split_host_header("[::1]:5") == ("::1", 5)
    assert split_host_header("Example.COM") == ("example.com", None)
    assert split_host_header("a b") == ("", None)
