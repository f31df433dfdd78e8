"""Finding the token a local `shellgate serve` published for its port (loopback targets only).

The rule is the server's (`shellgate.common.local_token`, which this package may not
import): `$XDG_RUNTIME_DIR/shellgate/router-<port>.token`, else
`~/.shellgate/run/shellgate/router-<port>.token`, readable only by the user who started it.
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path

__all__ = ["local_token_for", "local_token_path"]


def local_token_path(port: int, daemon: str = "router") -> Path:
    """The token file a local daemon on `port` publishes."""
    base = os.environ.get("XDG_RUNTIME_DIR") or str(Path.home() / ".shellgate" / "run")
    return Path(base) / "shellgate" / f"{daemon}-{port}.token"


def _loopback_port(target: str) -> int | None:
    host, sep, port = target.removeprefix("ipv4:").removeprefix("ipv6:").rpartition(":")
    if not sep or not port.isdigit():
        return None
    host = host.strip("[]")
    if host != "localhost":
        try:
            if not ipaddress.ip_address(host).is_loopback:
                return None
        except ValueError:
            return None
    return int(port)


def local_token_for(target: str) -> str | None:
    """The published token of a router at a loopback `target`, or None."""
    port = _loopback_port(target)
    if port is None:
        return None
    try:
        text = local_token_path(port).read_text().strip()
    except OSError:
        return None
    return text or None
