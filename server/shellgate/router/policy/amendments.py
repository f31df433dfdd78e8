"""Amendment lines for `default.rules` and their deduplicated append (spec 04 §1.5), as text."""

from __future__ import annotations

import json
from collections.abc import Sequence

# Rust's `str::trim` set (Unicode White_Space), narrower than Python's `str.strip()`.
_RUST_WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
    "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


class AmendError(ValueError):
    """An amendment cannot be written; `kind` is Codex's error variant name."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def _json(value: str) -> str:
    # serde_json escapes only `"`, `\` and control characters; non-ASCII stays as is.
    return json.dumps(value, ensure_ascii=False)


def prefix_rule_line(prefix: Sequence[str]) -> str:
    """`prefix_rule(pattern=["a", "b"], decision="allow")`; raises AmendError EmptyPrefix."""
    if not prefix:
        raise AmendError("EmptyPrefix", "prefix rule requires at least one token")
    tokens = ", ".join(_json(t) for t in prefix)
    return f'prefix_rule(pattern=[{tokens}], decision="allow")'


def network_rule_line(
    host: str, protocol: str, decision: str, justification: str | None = None
) -> str:
    """`network_rule(host=…, protocol=…, decision=…[, justification=…])`; validates inputs."""
    host = host.strip(_RUST_WHITESPACE)
    if not host:
        raise AmendError("EmptyNetworkHost", "network rule host cannot be empty")
    if protocol not in ("http", "https"):
        raise AmendError("InvalidNetworkProtocol", "network rule protocol must be http or https")
    if decision not in ("allow", "deny", "ask"):
        raise AmendError(
            "InvalidNetworkDecision", "network rule decision must be allow, deny, or ask"
        )
    line = f'network_rule(host={_json(host)}, protocol="{protocol}", decision="{decision}"'
    if justification is not None:
        line += f", justification={_json(justification)}"
    return line + ")"


def append_line(existing: str, line: str) -> str | None:
    """The file text after appending `line`, or None when an identical line is present."""
    # Rust `str::lines`: split on `\n`, dropping one trailing `\r` per line.
    if any(ln.removesuffix("\r") == line for ln in existing.split("\n")):
        return None
    prefix = existing if not existing or existing.endswith("\n") else existing + "\n"
    return f"{prefix}{line}\n"
