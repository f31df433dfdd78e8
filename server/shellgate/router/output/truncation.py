"""Truncation primitives for model-facing output (spec 05 §2)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = [
    "TruncationPolicy",
    "TruncationUnit",
    "approx_token_count",
    "approx_tokens_from_byte_count",
    "count_lines",
    "formatted_truncate_text",
    "truncate_middle",
    "truncate_text",
    "utf8_len",
]

# Bytes per token in every budget computation (spec 05 §2: "a token budget t is 4t bytes").
BYTES_PER_TOKEN = 4
# Lone surrogates can arrive through JSON; encode them byte-for-byte instead of failing.
_ENCODE_ERRORS = "surrogatepass"


class TruncationUnit(enum.StrEnum):
    """The unit a truncation policy counts in."""

    TOKENS = "tokens"
    BYTES = "bytes"


@dataclass(frozen=True, slots=True)
class TruncationPolicy:
    """`Tokens(n)` or `Bytes(n)`: the budget of model-facing output."""

    unit: TruncationUnit
    limit: int

    @classmethod
    def tokens(cls, limit: int) -> TruncationPolicy:
        """A token budget."""
        return cls(TruncationUnit.TOKENS, limit)

    @classmethod
    def bytes(cls, limit: int) -> TruncationPolicy:
        """A byte budget."""
        return cls(TruncationUnit.BYTES, limit)

    @property
    def byte_budget(self) -> int:
        """The budget in bytes (`n` or `4n`)."""
        if self.unit is TruncationUnit.BYTES:
            return self.limit
        return self.limit * BYTES_PER_TOKEN

    @property
    def token_budget(self) -> int:
        """The budget in tokens (`ceil(n/4)` or `n`)."""
        if self.unit is TruncationUnit.BYTES:
            return approx_tokens_from_byte_count(self.limit)
        return self.limit


def utf8_len(text: str) -> int:
    """Length of `text` in UTF-8 bytes."""
    return len(text.encode("utf-8", _ENCODE_ERRORS))


def approx_tokens_from_byte_count(byte_count: int) -> int:
    """`ceil(byte_count / 4)`."""
    return -(-byte_count // BYTES_PER_TOKEN)


def approx_token_count(text: str) -> int:
    """`ceil(utf8_len(text) / 4)`."""
    return approx_tokens_from_byte_count(utf8_len(text))


def count_lines(text: str) -> int:
    """Lines as Rust `str::lines()` counts them: a final `\\n` starts no new line."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def _is_continuation(byte: int) -> bool:
    return 0x80 <= byte <= 0xBF


def _marker(unit: TruncationUnit, count: int) -> str:
    return f"…{count} {'tokens' if unit is TruncationUnit.TOKENS else 'chars'} truncated…"


def _char_count(data: bytes) -> int:
    # Every UTF-8 character has exactly one non-continuation byte.
    return sum(1 for b in data if not _is_continuation(b))


def truncate_middle(text: str, max_bytes: int, unit: TruncationUnit) -> str:
    """Keep a head and a tail of at most `max_bytes` in total, joined by a marker."""
    if not text:
        return ""
    data = text.encode("utf-8", _ENCODE_ERRORS)
    total = len(data)
    if max_bytes <= 0:
        count = (
            approx_tokens_from_byte_count(total)
            if unit is TruncationUnit.TOKENS
            else _char_count(data)
        )
        return _marker(unit, count)
    if total <= max_bytes:
        return text
    left = max_bytes // 2
    right = max_bytes - left
    # Head: the longest run of whole characters ending at or before byte `left`.
    prefix_end = left
    while prefix_end > 0 and _is_continuation(data[prefix_end]):
        prefix_end -= 1
    # Tail: from the first character that starts at or after byte `total - right`.
    suffix_start = total - right
    while suffix_start < total and _is_continuation(data[suffix_start]):
        suffix_start += 1
    suffix_start = max(suffix_start, prefix_end)
    if unit is TruncationUnit.TOKENS:
        # The budget difference, not the tokens the removed bytes amount to (spec 05 §2).
        count = approx_tokens_from_byte_count(total - max_bytes)
    else:
        count = _char_count(data[prefix_end:suffix_start])
    head = data[:prefix_end].decode("utf-8", _ENCODE_ERRORS)
    tail = data[suffix_start:].decode("utf-8", _ENCODE_ERRORS)
    return head + _marker(unit, count) + tail


def truncate_text(text: str, policy: TruncationPolicy) -> str:
    """Middle-truncate `text` to the policy's budget (no header)."""
    if policy.unit is TruncationUnit.BYTES:
        return truncate_middle(text, policy.limit, TruncationUnit.BYTES)
    if policy.limit > 0 and utf8_len(text) <= policy.byte_budget:
        return text
    return truncate_middle(text, policy.byte_budget, TruncationUnit.TOKENS)


def truncation_warning(original_token_count: int) -> str:
    """The first line of a truncated body (current Codex form, decision 2)."""
    return f"Warning: truncated output (original token count: {original_token_count})\n"


def formatted_truncate_text(text: str, policy: TruncationPolicy) -> str:
    """`text` if it fits the byte budget, else the Warning/Total-lines header + truncation."""
    if utf8_len(text) <= policy.byte_budget:
        return text
    return (
        truncation_warning(approx_token_count(text))
        + f"Total output lines: {count_lines(text)}\n\n"
        + truncate_text(text, policy)
    )
