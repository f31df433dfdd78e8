"""Output bytes → text (spec 05 §1.2, §3.6): lossy UTF-8, and the classic path's legacy guess.

`bytes_to_string_smart` is a deliberately small, approximate stand-in for Codex's chardetng
detection (no Python library reproduces chardetng's choices): UTF-8 first, then a scored
guess among three single-byte encodings, else lossy UTF-8 as Codex does. It cannot be exact
for every input; the spec vectors pin the cases that matter.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

__all__ = ["bytes_to_string_smart", "decode_utf8_lossy"]


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
