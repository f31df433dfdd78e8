"""Which connections a set of NetworkPolicies admits: the networking.k8s.io/v1 rules.

A small model of the semantics (isolation per direction, peers by pod/namespace selector or
ipBlock, numeric ports) so tests can assert the exact set of allowed flows of the shipped
policies; the manifests use only `matchLabels`, numeric ports and ipBlocks, and the model
refuses anything else instead of guessing.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any

Policy = dict[str, Any]


@dataclass(frozen=True)
class Endpoint:
    """A pod (namespace + labels) or an address outside the cluster (ip only)."""

    name: str
    namespace: str = ""
    labels: dict[str, str] = field(default_factory=dict, hash=False)
    namespace_labels: dict[str, str] = field(default_factory=dict, hash=False)
    ip: str = ""


def _matches(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    assert set(selector) <= {"matchLabels"}, f"unsupported selector {selector}"
    return bool(selector.get("matchLabels", {}).items() <= labels.items())


def _peer_matches(peer: dict[str, Any], namespace: str, other: Endpoint) -> bool:
    if "ipBlock" in peer:
        block = peer["ipBlock"]
        if not other.ip:
            return False
        ip = ipaddress.ip_address(other.ip)
        return ip in ipaddress.ip_network(block["cidr"]) and not any(
            ip in ipaddress.ip_network(e) for e in block.get("except", [])
        )
    if not other.namespace:
        return False
    if "namespaceSelector" in peer:
        if not _matches(peer["namespaceSelector"], other.namespace_labels):
            return False
    elif other.namespace != namespace:
        return False
    return _matches(peer.get("podSelector", {}), other.labels)


def _port_matches(ports: list[dict[str, Any]] | None, port: int, protocol: str) -> bool:
    if not ports:
        return True
    for entry in ports:
        assert isinstance(entry["port"], int), "the model handles numeric ports only"
        if entry["port"] == port and entry.get("protocol", "TCP") == protocol:
            return True
    return False


def _side_allows(
    policies: list[Policy], pod: Endpoint, other: Endpoint, port: int, protocol: str, kind: str
) -> bool:
    """Whether `pod`'s policies of `kind` (Ingress/Egress) admit traffic with `other`."""
    if not pod.namespace:
        return True  # outside the cluster: no NetworkPolicy applies
    selecting = [
        p for p in policies
        if p["metadata"]["namespace"] == pod.namespace
        and _matches(p["spec"]["podSelector"], pod.labels)
        and kind in p["spec"].get("policyTypes", ["Ingress"])
    ]  # fmt: skip
    if not selecting:
        return True
    key, peers_key = ("ingress", "from") if kind == "Ingress" else ("egress", "to")
    for policy in selecting:
        namespace = policy["metadata"]["namespace"]
        for rule in policy["spec"].get(key) or []:
            peers = rule.get(peers_key)
            if peers is not None and not any(_peer_matches(p, namespace, other) for p in peers):
                continue
            if _port_matches(rule.get("ports"), port, protocol):
                return True
    return False


def allowed(
    policies: list[Policy], src: Endpoint, dst: Endpoint, port: int, protocol: str = "TCP"
) -> bool:
    """True when the source's egress and the destination's ingress both admit the flow."""
    return _side_allows(policies, src, dst, port, protocol, "Egress") and _side_allows(
        policies, dst, src, port, protocol, "Ingress"
    )
