"""The egress policy (Codex's `[network]` model) and the SOCKS5 parser, as pure functions."""

from __future__ import annotations

import pytest
from shellgate.common.egress import socks5
from shellgate.common.egress.policy import (
    EgressNarrowing,
    NetworkMode,
    NetworkPolicy,
    Protocol,
    Reason,
    Verdict,
    host_matches,
    is_non_public,
)

HTTP, CONNECT, SOCKS = Protocol.HTTP, Protocol.HTTPS_CONNECT, Protocol.SOCKS5_TCP


@pytest.mark.parametrize(
    ("pattern", "host", "matches"),
    [
        ("example.com", "example.com", True),
        ("Example.COM.", "example.com", True),
        ("example.com", "api.example.com", False),
        ("*.example.com", "api.example.com", True),
        ("*.example.com", "example.com", False),
        ("**.example.com", "example.com", True),
        ("**.example.com", "a.b.example.com", True),
        ("*", "anything.test", True),
        ("region*.v2.example.com", "region1.v2.example.com", True),
        ("region*.v2.example.com", "foo.region1.v2.example.com", False),
        ("*.example.com", "evilexample.com", False),
    ],
)
def test_patterns_match_as_codex_s(pattern: str, host: str, matches: bool) -> None:
    assert host_matches(pattern, host) is matches


def _reason(
    policy: NetworkPolicy, host: str, method: str = "GET", protocol: Protocol = HTTP
) -> str:
    return policy.decide_host(host, method, protocol).reason.value


def test_deny_wins_and_an_empty_allow_list_allows_nothing() -> None:
    policy = NetworkPolicy(True, allowed_domains=("**.example.com",),
                           denied_domains=("bad.example.com",))  # fmt: skip
    assert _reason(policy, "ok.example.com") == "allowed"
    assert _reason(policy, "BAD.example.com.") == "denied"
    assert _reason(policy, "other.test") == "not_allowed"
    assert _reason(NetworkPolicy(True), "example.com") == "not_allowed"
    with pytest.raises(ValueError, match="global wildcard"):
        NetworkPolicy(True, denied_domains=("*",))


def test_limited_mode_allows_read_methods_of_plain_http_only() -> None:
    policy = NetworkPolicy(True, mode=NetworkMode.LIMITED, allowed_domains=("*",))
    for method in ("GET", "head", "OPTIONS"):
        assert _reason(policy, "a.test", method) == "allowed"
    assert _reason(policy, "a.test", "POST") == "method_not_allowed"
    assert _reason(policy, "a.test", "CONNECT", CONNECT) == "method_not_allowed"
    assert _reason(policy, "a.test", "", SOCKS) == "method_not_allowed"


def test_local_addresses_pass_only_as_listed_literals_or_with_local_binding() -> None:
    policy = NetworkPolicy(True, allowed_domains=("*.test", "10.0.0.5"))
    assert policy.decide_addresses("a.test", ["93.184.216.34"]).allowed
    assert policy.decide_addresses("a.test", ["10.0.0.5"]).allowed
    for address in ("127.0.0.1", "10.0.0.6", "192.168.1.1", "169.254.1.1", "100.64.0.1", "::1",
                    "fd00::1", "::ffff:127.0.0.1", "0.0.0.0"):  # fmt: skip
        assert is_non_public(address), address
        decision = policy.decide_addresses("a.test", [address])
        assert decision.reason is Reason.NOT_ALLOWED_LOCAL, address
    # One local address among public ones is enough to refuse (a rebinding answer).
    assert not policy.decide_addresses("a.test", ["93.184.216.34", "127.0.0.1"]).allowed
    assert (
        NetworkPolicy(True, allow_local_binding=True).decide_addresses("x", ["127.0.0.1"]).allowed
    )
    assert policy.decide_addresses("a.test", []).reason is Reason.UNRESOLVED


def test_a_turn_only_narrows() -> None:
    base = NetworkPolicy(True, allowed_domains=("*.example.com", "10.0.0.5"),
                         allow_local_binding=False)  # fmt: skip
    turn = EgressNarrowing(NetworkMode.LIMITED, ("api.example.com", "evil.test", "10.0.0.5"),
                           ("old.example.com",))  # fmt: skip
    narrowed = base.narrowed(turn)
    assert base.narrowed(EgressNarrowing()) == base.narrowed(None) == base
    assert _reason(narrowed, "api.example.com") == "allowed"
    assert _reason(narrowed, "web.example.com") == "not_allowed"  # outside the turn's list
    assert _reason(narrowed, "evil.test") == "not_allowed"  # outside the environment's
    assert _reason(narrowed, "api.example.com", "POST") == "method_not_allowed"
    assert _reason(narrowed, "old.example.com") == "denied"
    assert not narrowed.decide_addresses("api.example.com", ["10.0.0.6"]).allowed
    assert narrowed.decide_addresses("api.example.com", ["10.0.0.5"]).allowed


def test_prompt_hosts_are_asked_for_only_outside_the_allow_list() -> None:
    policy = NetworkPolicy(True, allowed_domains=("a.test",)).with_rules(
        allowed=("b.test",), denied=("c.test",), prompt=("d.test", "c.test")
    )
    assert _reason(policy, "b.test") == "allowed"
    assert _reason(policy, "c.test") == "denied"
    assert policy.decide_host("d.test", "GET", HTTP).verdict is Verdict.ASK


def test_socks5_greeting_and_connect_are_parsed_incrementally() -> None:
    greeting = bytes((5, 2, 0, 2))
    assert socks5.parse_greeting(greeting[:3]) is None
    assert socks5.parse_greeting(greeting) == (True, 4)
    assert socks5.parse_greeting(bytes((5, 1, 2))) == (False, 3)
    name = b"pypi.org"
    request = bytes((5, 1, 0, 3, len(name))) + name + (443).to_bytes(2, "big")
    for cut in range(len(request)):
        assert socks5.parse_request(request[:cut]) is None
    target, used = socks5.parse_request(request + b"rest") or (None, 0)
    assert target == socks5.Target("pypi.org", 443) and used == len(request)
    v4 = bytes((5, 1, 0, 1, 10, 0, 0, 1, 0, 80))
    assert socks5.parse_request(v4) == (socks5.Target("10.0.0.1", 80), 10)
    with pytest.raises(socks5.Socks5Error) as bind:
        socks5.parse_request(bytes((5, 2, 0, 1, 10, 0, 0, 1, 0, 80)))
    assert bind.value.reply == socks5.COMMAND_NOT_SUPPORTED
    with pytest.raises(socks5.Socks5Error):
        socks5.parse_greeting(bytes((4, 1, 0)))
    assert socks5.reply(socks5.NOT_ALLOWED)[:2] == bytes((5, 2))
