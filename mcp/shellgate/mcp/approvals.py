"""A shellgate approval as an MCP elicitation, and the user's answer back as a Decision."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

import mcp.types as types
from mcp.types.version import is_version_at_least
from shellgate.client.events import ApprovalKind, ApprovalRequired, Decision

DECISION_FIELD = "decision"
# The protocol version that titles enum choices with `oneOf` [{const, title}];
# `enumNames` is deprecated from then on.
TITLED_ENUM_SINCE = "2025-11-25"
# Shown to the user next to each choice (the wire names are what the form returns).
_CHOICE_TITLES = {
    Decision.APPROVED: "Approve once",
    Decision.APPROVED_FOR_SESSION: "Approve for this session",
    Decision.APPROVED_WITH_AMENDMENT: "Approve and allow this command prefix from now on",
    Decision.DENIED: "Deny",
    Decision.ABORT: "Deny and stop",
}


def choices(ask: ApprovalRequired) -> list[Decision]:
    """The decisions the router offers for this approval (deny is always one of them)."""
    offered = list(ask.available_decisions) or [Decision.APPROVED, Decision.DENIED]
    if Decision.DENIED not in offered:
        offered.append(Decision.DENIED)
    return offered


def message(ask: ApprovalRequired) -> str:
    """The question put to the user."""
    what = "apply this patch" if ask.kind == ApprovalKind.APPLY_PATCH else "run this command"
    lines = [f"shellgate asks whether to {what}:", f"  {shlex.join(ask.argv)}" if ask.argv else ""]
    if ask.cwd:
        lines.append(f"  in {ask.cwd} ({ask.environment_id or 'local'})")
    if ask.reason:
        lines.append(f"Reason: {ask.reason}")
    if ask.proposed_amendment:
        lines.append(f"Proposed rule: allow the prefix `{shlex.join(ask.proposed_amendment)}`")
    return "\n".join(line for line in lines if line)


def _titled_choices(offered: list[Decision], protocol_version: str | None) -> dict[str, Any]:
    """The choices as the client's protocol spells a titled single-select enum."""
    if protocol_version is not None and not is_version_at_least(
        protocol_version, TITLED_ENUM_SINCE
    ):
        # Before 2025-11-25 the titles travelled in the non-standard `enumNames`.
        return {
            "enum": [d.name.lower() for d in offered],
            "enumNames": [_CHOICE_TITLES[d] for d in offered],
        }
    return {"oneOf": [{"const": d.name.lower(), "title": _CHOICE_TITLES[d]} for d in offered]}


def requested_schema(
    ask: ApprovalRequired, protocol_version: str | None = None
) -> types.ElicitRequestedSchema:
    """A one-field form: the decision, one of the offered choices, each with its title.

    `protocol_version` is the client's (None: the current form, as for 2026-era requests).
    """
    offered = choices(ask)
    field: dict[str, Any] = {
        "type": "string",
        "title": "Decision",
        **_titled_choices(offered, protocol_version),
        "default": Decision.DENIED.name.lower(),
    }
    return {"type": "object", "properties": {DECISION_FIELD: field}, "required": [DECISION_FIELD]}


def elicit_request(ask: ApprovalRequired) -> types.ElicitRequest:
    """The elicitation request (the input request of the 2026 multi-round-trip form)."""
    return types.ElicitRequest(
        params=types.ElicitRequestFormParams(
            message=message(ask), requested_schema=requested_schema(ask)
        )
    )


def decision_from(
    action: str, content: Mapping[str, Any] | None, offered: list[Decision] | None = None
) -> Decision:
    """The user's decision: only an accepted form naming an offered choice approves.

    Both forms answer with the choice's value (`const` or `enum` entry), so one rule reads
    the answers of old and current clients alike.
    """
    if action != "accept" or not content:
        return Decision.DENIED
    value = content.get(DECISION_FIELD)
    if not isinstance(value, str):
        return Decision.DENIED
    try:
        decision = Decision.parse(value)
    except KeyError:
        return Decision.DENIED
    if offered is not None and decision not in offered:
        return Decision.DENIED
    return decision
