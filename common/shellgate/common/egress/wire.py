"""`EgressNarrowing` ↔ its wire form (PermissionProfile.egress, SandboxRequest.egress)."""

from __future__ import annotations

from shellgate.common.egress.policy import EgressNarrowing, NetworkMode
from shellgate.v1 import shell_pb2

__all__ = ["narrowing_from_pb", "narrowing_pb"]

_MODES = {
    shell_pb2.EGRESS_MODE_FULL: NetworkMode.FULL,
    shell_pb2.EGRESS_MODE_LIMITED: NetworkMode.LIMITED,
}
_MODES_PB = {mode: number for number, mode in _MODES.items()}


def narrowing_from_pb(message: shell_pb2.EgressNarrowing) -> EgressNarrowing:
    """The domain narrowing; an unknown mode number narrows to limited (fail closed)."""
    mode = _MODES.get(message.mode, NetworkMode.LIMITED) if message.mode else None
    return EgressNarrowing(mode, tuple(message.allowed_domains), tuple(message.denied_domains))


def narrowing_pb(narrowing: EgressNarrowing) -> shell_pb2.EgressNarrowing:
    """The wire form."""
    return shell_pb2.EgressNarrowing(
        mode=_MODES_PB[narrowing.mode] if narrowing.mode else shell_pb2.EGRESS_MODE_UNSPECIFIED,
        allowed_domains=list(narrowing.allowed_domains),
        denied_domains=list(narrowing.denied_domains),
    )
