"""Codex's tool specs (as ListTools serves them) translated to MCP tools, and back to items."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import mcp.types as types
from shellgate.client.items import custom_tool_call_item, function_call_item
from shellgate.client.records import EnvironmentInfo, ToolSpec
from shellgate.v1 import common_pb2

LIST_ENVIRONMENTS = "list_environments"
LIST_ENVIRONMENTS_DESCRIPTION = (
    "Lists the environments `exec_command` can run in; pass one's id as `environment_id`."
)
# A freeform (custom) tool has no JSON arguments; MCP needs an object, so its text travels
# as the one string argument `input` (the name Codex's function-form apply_patch uses).
FREEFORM_ARGUMENT = "input"


class ToolArgumentError(ValueError):
    """The MCP arguments cannot form the tool's call (no string `input` for a freeform tool)."""


def _freeform_schema(spec: Mapping[str, Any]) -> dict[str, Any]:
    grammar = spec.get("format", {}).get("definition", "")
    description = "The entire freeform input of the tool, verbatim."
    if grammar:
        description += " Lark grammar:\n" + str(grammar)
    return {
        "type": "object",
        "properties": {FREEFORM_ARGUMENT: {"type": "string", "description": description}},
        "required": [FREEFORM_ARGUMENT],
        "additionalProperties": False,
    }


def mcp_tool(spec: ToolSpec) -> types.Tool:
    """One Codex tool spec as an MCP tool: same name, description and (function) schema."""
    body = spec.spec
    if body.get("type") == "custom":
        schema = _freeform_schema(body)
    else:
        schema = dict(body.get("parameters") or {"type": "object"})
    return types.Tool(name=spec.name, description=body.get("description", ""), input_schema=schema)


def mcp_tools(
    specs: Sequence[ToolSpec], environments: Sequence[EnvironmentInfo]
) -> list[types.Tool]:
    """The MCP tool list: the visible specs, plus list_environments when there is a choice."""
    tools = [mcp_tool(spec) for spec in specs if not spec.hidden]
    if len(environments) > 1:
        tools.append(types.Tool(
            name=LIST_ENVIRONMENTS, description=LIST_ENVIRONMENTS_DESCRIPTION,
            input_schema={"type": "object", "properties": {}, "additionalProperties": False},
        ))  # fmt: skip
    return tools


def call_item(
    spec: ToolSpec, arguments: Mapping[str, Any] | None, call_id: str
) -> common_pb2.ToolCallItem:
    """The model output item the MCP call stands for."""
    args = dict(arguments or {})
    if spec.spec.get("type") == "custom":
        text = args.get(FREEFORM_ARGUMENT)
        if not isinstance(text, str) or set(args) != {FREEFORM_ARGUMENT}:
            raise ToolArgumentError(
                f"{spec.name} takes exactly one string argument `{FREEFORM_ARGUMENT}`"
            )
        return custom_tool_call_item(spec.name, text, call_id)
    # The arguments go to the router verbatim: its decoder gives Codex's own parse errors.
    return function_call_item(spec.name, args, call_id)


def environments_text(environments: Sequence[EnvironmentInfo]) -> str:
    """The list_environments result: one environment per line."""
    lines = []
    for env in environments:
        where = env.target or "local"
        state = "reachable" if env.reachable else f"unreachable: {env.last_error}"
        lines.append(f"{env.environment_id}\t{where}\t{state}")
    return "\n".join(lines)
