"""Reading an output item's JSON, and why an item is dropped (harness diagnostics only)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from shellgate.router.decode.rust_text import refuse_lone_surrogates

__all__ = ["NoToolCall", "not_strings", "parse_response_item"]


@dataclass(frozen=True)
class NoToolCall:
    """The item is not a tool call; nothing is answered."""

    reason: str


def parse_response_item(text: str) -> Mapping[str, Any] | NoToolCall:
    """The raw output-item JSON text as a mapping (non-objects are not tool calls)."""
    try:
        value = json.loads(text)
        refuse_lone_surrogates(value)  # serde_json would: Codex drops such an item whole
    except (ValueError, RecursionError) as exc:
        return NoToolCall(f"item is not valid JSON: {exc}")
    if not isinstance(value, dict):
        return NoToolCall("item is not a JSON object")
    return value

_JSON_KINDS: Final = {dict: "an object", list: "an array", bool: "a boolean", int: "a number",
                      float: "a number", type(None): "null"}


def not_strings(kind: str, item: Mapping[str, Any], fields: tuple[str, ...]) -> str:
    """Why a call item is dropped (serde fails to read it, so Codex drops it): each field
    that is missing or not a string, e.g. `function_call: arguments must be a string, not
    an object`. Not model-facing: the harness's diagnostics only."""
    problems = [
        f"{name} is missing" if name not in item
        else f"{name} must be a string, not {_JSON_KINDS.get(type(item[name]), 'a value')}"
        for name in fields
        if not isinstance(item.get(name), str)
    ]
    return f"{kind}: {'; '.join(problems)}"
