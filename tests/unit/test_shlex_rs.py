"""Rust `shlex` 1.3 split/join semantics (spec 03 §D.4), where Python's shlex differs."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shellgate.router.bash.shlex_rs import (
    NUL_JOIN_PLACEHOLDER,
    shlex_join,
    shlex_split,
    try_join,
    try_quote,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a b\tc\nd", ["a", "b", "c", "d"]),
        ("  # only a comment", []),
        ("a # comment\nb", ["a", "b"]),
        ("a#b c", ["a#b", "c"]),
        ("'a b' \"c d\"", ["a b", "c d"]),
        ("a\\ b", ["a b"]),
        ("a\\\nb", ["ab"]),
        ('"\\$ \\` \\" \\\\"', ['$ ` " \\']),
        ('"\\n\\a"', ["\\n\\a"]),
        ('"a\\\nb"', ["ab"]),
        ("'\\n'", ["\\n"]),
        ("x''y", ["xy"]),
        ("''", [""]),
        ("", []),
        ("ünï 'é'", ["ünï", "é"]),
    ],
)
def test_split(text: str, expected: list[str]) -> None:
    assert shlex_split(text) == expected


@pytest.mark.parametrize("text", ["'open", '"open', "trailing\\", '"a\\'])
def test_split_failures(text: str) -> None:
    assert shlex_split(text) is None


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("", "''"),
        ("plain-word_1.2/x:y@z+]", "plain-word_1.2/x:y@z+]"),
        ("--color=always", "'--color=always'"),
        ("COD`EX_SANDBOX", "'COD`EX_SANDBOX'"),
        ("pkg\\src\\main.rs", '"pkg\\\\src\\\\main.rs"'),
        ("|", "'|'"),
        ("it's $x", "\"it's \"'$x'"),
        ("ünï", "'ünï'"),
        ("^x", "'^x'"),
        ("a^b", "a'^b'"),
        ("a'b", '"a\'b"'),
        ("!x", "'!x'"),
        ("a b", "'a b'"),
        ('a"b', "'a\"b'"),
    ],
)
def test_quote(word: str, expected: str) -> None:
    assert try_quote(word) == expected


def test_join_and_nul() -> None:
    assert shlex_join(["sed", "-n", "1,10p", "a b"]) == "sed -n '1,10p' 'a b'"
    assert try_join(["a", "b\0c"]) is None
    assert shlex_join(["a", "b\0c"]) == NUL_JOIN_PLACEHOLDER


@settings(max_examples=300, deadline=1000)
@given(words=st.lists(st.text(st.characters(blacklist_characters="\0", codec="utf-8"))))
def test_join_then_split_round_trips(words: list[str]) -> None:
    joined = try_join(words)
    assert joined is not None
    assert shlex_split(joined) == words


@settings(max_examples=300, deadline=1000)
@given(text=st.text(max_size=300))
def test_split_never_crashes(text: str) -> None:
    result = shlex_split(text)
    assert result is None or all(isinstance(word, str) for word in result)
