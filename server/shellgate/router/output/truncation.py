"""Truncation primitives for model-facing output (spec 05 §2) and byte decoding (§1.2, §3.6)."""

from __future__ import annotations

import enum
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

__all__ = [
    "TruncationPolicy",
    "TruncationUnit",
    "approx_token_count",
    "approx_tokens_from_byte_count",
    "bytes_to_string_smart",
    "count_lines",
    "decode_utf8_lossy",
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


# --- Byte decoding -----------------------------------------------------------------------


def decode_utf8_lossy(data: bytes) -> str:
    """UTF-8 with one U+FFFD per maximal invalid subsequence (unified exec, spec 05 §3.6)."""
    return data.decode("utf-8", "replace")


# Windows-1252 smart punctuation bytes that IBM866 reads as Cyrillic capitals (spec 05 §1.2).
_WINDOWS_1252_PUNCT = frozenset({0x91, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x99})
# The legacy single-byte encodings the classic path recognises, in tie-break order.
_LEGACY_CODECS = ("cp1251", "cp866", "cp1252")
# How much of the input the encoding guess looks at.
_DETECTION_SAMPLE_BYTES = 64 * 1024
_CYRILLIC_VOWELS = frozenset("аеёиоуыэюяіїєАЕЁИОУЫЭЮЯІЇЄ")


def _single_byte_table(codec: str) -> dict[int, str]:
    # Bytes a codec leaves undefined decode to the C1 control of the same value, as the
    # WHATWG tables do; they then count against the candidate instead of failing it.
    table: dict[int, str] = {}
    for byte in range(0x80, 0x100):
        try:
            table[byte] = bytes([byte]).decode(codec)
        except UnicodeDecodeError:
            table[byte] = chr(byte)
    return table


_TABLES = {codec: _single_byte_table(codec) for codec in _LEGACY_CODECS}


def _decode_single_byte(data: bytes, codec: str) -> str:
    return data.decode("latin-1").translate(_TABLES[codec])


def _looks_like_windows_1252_punctuation(data: bytes) -> bool:
    saw_punct = False
    saw_ascii_letter = False
    for byte in data:
        if byte >= 0xA0:
            return False
        if byte >= 0x80:
            if byte not in _WINDOWS_1252_PUNCT:
                return False
            saw_punct = True
        if 0x41 <= byte <= 0x5A or 0x61 <= byte <= 0x7A:
            saw_ascii_letter = True
    return saw_punct and saw_ascii_letter


def _case_pattern_ok(word: str) -> bool:
    return word.islower() or word.isupper() or (word[0].isupper() and word[1:].islower())


def _is_cyrillic(ch: str) -> bool:
    return "\u0400" <= ch <= "\u04ff"


@lru_cache(maxsize=4096)
def _word_score(word: str) -> int:
    if word.isascii():
        return 0
    cyrillic = sum(1 for ch in word if _is_cyrillic(ch))
    if cyrillic and cyrillic != len(word):
        return -5  # mixed scripts inside one word: a wrong guess
    if cyrillic:
        vowels = sum(1 for ch in word if ch in _CYRILLIC_VOWELS)
        plausible = _case_pattern_ok(word) and not (len(word) >= 3 and vowels in (0, len(word)))
        return len(word) if plausible else -len(word)
    # Latin letters beyond ASCII are plausible inside words that also hold ASCII letters.
    non_ascii = sum(1 for ch in word if not ch.isascii())
    if non_ascii == len(word) or not _case_pattern_ok(word):
        return -len(word)
    return 2 * non_ascii


def _symbol_score(ch: str) -> int:
    if "\x80" <= ch <= "\x9f" or "\u2500" <= ch <= "\u25ff":
        return -3  # C1 controls and box drawing rarely appear in command output
    return -1


_WORD = re.compile(r"[^\W\d_]+")
_HIGH_BYTE = re.compile("[\x80-\xff]")
_HIGH_BYTES = re.compile(b"[\x80-\xff]")


def _plausibility(text: str, raw: str) -> int:
    # `raw` is the input read as Latin-1, so positions in `text` and `raw` match byte for
    # byte; ASCII-only words and bytes cannot tell the candidates apart and are skipped.
    score = sum(_word_score(m.group()) for m in _WORD.finditer(text) if not m.group().isascii())
    for match in _HIGH_BYTE.finditer(raw):
        ch = text[match.start()]
        if not ch.isalpha():
            score += -1 if unicodedata.category(ch) == "Zs" else _symbol_score(ch)
    return score


def bytes_to_string_smart(data: bytes) -> str:
    """Classic-path decoding: UTF-8, else a detected legacy encoding, else lossy UTF-8."""
    if not data:
        return ""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    if _looks_like_windows_1252_punctuation(data):
        return _decode_single_byte(data, "cp1252")
    # A small stand-in for chardetng: score each single-byte candidate by how word-like
    # its decoding is; when none is plausible, fall back to lossy UTF-8 as Codex does.
    # Scoring a bounded sample keeps detection cheap on large outputs; it starts shortly
    # before the first non-ASCII byte, where the evidence is.
    first_high = _HIGH_BYTES.search(data)
    start = max(0, (first_high.start() if first_high else 0) - 1024)
    sample = data[start : start + _DETECTION_SAMPLE_BYTES].decode("latin-1")
    best: tuple[int, str] | None = None
    for codec in _LEGACY_CODECS:
        score = _plausibility(sample.translate(_TABLES[codec]), sample)
        if score > 0 and (best is None or score > best[0]):
            best = (score, codec)
    return _decode_single_byte(data, best[1]) if best is not None else decode_utf8_lossy(data)
