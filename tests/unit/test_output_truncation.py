"""Truncation primitives (spec 05 §2): examples from the spec and Hypothesis properties."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st
from shellgate.router.output.truncation import (
    TruncationPolicy,
    TruncationUnit,
    approx_token_count,
    count_lines,
    formatted_truncate_text,
    truncate_middle,
    truncate_text,
)

SETTINGS = settings(max_examples=300, deadline=None)
# Text with multi-byte characters, newlines and carriage returns mixed in.
TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from("ab\n\r é中😀"),
        st.characters(codec="utf-8"),
    ),
    max_size=200,
)


def _b(s: str) -> int:
    return len(s.encode("utf-8", "surrogatepass"))


def test_spec_examples_token_mode() -> None:
    seq = "".join(f"{i}\n" for i in range(1, 11))
    assert truncate_text(seq, TruncationPolicy.tokens(0)) == "…6 tokens truncated…"
    assert truncate_text(seq, TruncationPolicy.tokens(1)) == "1\n…5 tokens truncated…0\n"
    assert (
        truncate_text(seq, TruncationPolicy.tokens(3)) == "1\n2\n3\n…3 tokens truncated…\n9\n10\n"
    )
    emoji = "😀" * 3000
    assert truncate_text(emoji, TruncationPolicy.tokens(5)) == "😀😀…2995 tokens truncated…😀😀"
    assert (
        truncate_text("a" + emoji, TruncationPolicy.tokens(5)) == "a😀😀…2996 tokens truncated…😀😀"
    )
    assert (
        truncate_text("ab" + "é" * 5000, TruncationPolicy.tokens(5))
        == "abéééé…2496 tokens truncated…ééééé"
    )
    assert (
        truncate_text("中" * 5000, TruncationPolicy.tokens(5))
        == "中中中…3745 tokens truncated…中中中"
    )


def test_spec_examples_byte_mode() -> None:
    text = "a" + "😀" * 5000
    out = truncate_text(text, TruncationPolicy.bytes(10_000))
    assert out == "a" + "😀" * 1249 + "…2501 chars truncated…" + "😀" * 1250
    assert truncate_text("a" * 10_000, TruncationPolicy.bytes(10_000)) == "a" * 10_000
    assert (
        truncate_text("a" * 10_001, TruncationPolicy.bytes(10_000)).count("…1 chars truncated…")
        == 1
    )


def test_formatted_current_form_and_boundaries() -> None:
    assert formatted_truncate_text("a" * 40_000, TruncationPolicy.tokens(10_000)) == "a" * 40_000
    out = formatted_truncate_text("a" * 40_001, TruncationPolicy.tokens(10_000))
    assert out.startswith(
        "Warning: truncated output (original token count: 10001)\nTotal output lines: 1\n\n"
    )
    assert formatted_truncate_text("abcd", TruncationPolicy.tokens(1)) == "abcd"
    assert formatted_truncate_text("abcde", TruncationPolicy.tokens(1)) == (
        "Warning: truncated output (original token count: 2)\nTotal output lines: 1\n\n"
        "ab…1 tokens truncated…de"
    )
    # The warning keeps saying "token count" under a byte policy.
    assert formatted_truncate_text("x" * 11, TruncationPolicy.bytes(10)).startswith(
        "Warning: truncated output (original token count: 3)\n"
    )
    assert formatted_truncate_text("", TruncationPolicy.tokens(0)) == ""


def test_count_lines_like_rust_lines() -> None:
    cases = {
        "": 0,
        "a": 1,
        "a\n": 1,
        "a\nb": 2,
        "a\nb\n": 2,
        "a\n\n": 2,
        "\n": 1,
        "\n\n": 2,
        "a\rb": 1,
        "a\r\nb\r\n": 2,
        "a\r\n\r\nb": 3,
    }
    for text, expected in cases.items():
        assert count_lines(text) == expected, text


@SETTINGS
@given(TEXT)
def test_count_lines_reference(text: str) -> None:
    pieces = text.split("\n")
    if pieces and pieces[-1] == "":
        pieces.pop()
    assert count_lines(text) == len(pieces)


@SETTINGS
@given(TEXT)
def test_approx_token_count_is_ceil_bytes_over_4(text: str) -> None:
    assert approx_token_count(text) == math.ceil(_b(text) / 4)


def _split(out: str, unit: str) -> tuple[str, int, str]:
    start = out.index("…")
    end = out.index(f" {unit} truncated…", start) + len(f" {unit} truncated…")
    return out[:start], int(out[start + 1 : out.index(" ", start)]), out[end:]


@SETTINGS
@given(TEXT, st.integers(min_value=0, max_value=80))
def test_token_truncation_within_budget(text: str, budget: int) -> None:
    out = truncate_text(text, TruncationPolicy.tokens(budget))
    if budget > 0 and _b(text) <= 4 * budget:
        assert out == text
        return
    if not text:
        assert out == ""
        return
    head, count, tail = _split(out, "tokens")
    assert text.startswith(head) and text.endswith(tail)
    # Head and tail never exceed their halves of the byte budget.
    assert _b(head) <= (4 * budget) // 2
    assert _b(tail) <= 4 * budget - (4 * budget) // 2
    assert _b(head) + _b(tail) <= 4 * budget
    # The marker counts the budget difference T - B.
    assert count == approx_token_count(text) - budget


@SETTINGS
@given(TEXT, st.integers(min_value=0, max_value=300))
def test_byte_truncation_within_budget(text: str, budget: int) -> None:
    out = truncate_text(text, TruncationPolicy.bytes(budget))
    if _b(text) <= budget and (budget > 0 or not text):
        assert out == text
        return
    head, count, tail = _split(out, "chars")
    assert text.startswith(head) and text.endswith(tail)
    assert _b(head) + _b(tail) <= budget
    # The marker counts the characters actually removed.
    assert count == len(text) - len(head) - len(tail)


@SETTINGS
@given(TEXT, st.integers(min_value=1, max_value=80), st.sampled_from(["tokens", "bytes"]))
def test_fitting_text_is_a_fixed_point(text: str, limit: int, unit: str) -> None:
    policy = TruncationPolicy(TruncationUnit(unit), limit)
    once = formatted_truncate_text(text, policy)
    if _b(text) <= policy.byte_budget:
        assert once == text
        assert formatted_truncate_text(once, policy) == once
        assert truncate_text(once, policy) == once
    else:
        assert once.startswith(
            f"Warning: truncated output (original token count: {approx_token_count(text)})\n"
        )
        assert once.split("\n", 2)[1] == f"Total output lines: {count_lines(text)}"


@SETTINGS
@given(TEXT, st.integers(min_value=0, max_value=100))
def test_truncate_middle_cuts_on_character_boundaries(text: str, max_bytes: int) -> None:
    out = truncate_middle(text, max_bytes, TruncationUnit.TOKENS)
    # Decoding would have failed inside the function if a cut split a character; the
    # result must re-encode cleanly as well.
    assert out.encode("utf-8", "surrogatepass").decode("utf-8", "surrogatepass") == out
