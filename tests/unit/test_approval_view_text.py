"""view_text: hidden characters escaped and named, clips marked, a patch's files and diff."""

from __future__ import annotations

import pytest
from shellgate.router.apply_patch.verify import (
    AddChange,
    ApplyPatchAction,
    DeleteChange,
    UpdateChange,
)
from shellgate.router.runtime.approvals.view_text import (
    clip_marked,
    hidden_names,
    patch_diff,
    patch_files,
    visible,
)


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("echo ok '\u202e' ; touch x ;#", "echo ok '\\u202e' ; touch x ;#"),
        ("a\u2066b\u2069", "a\\u2066b\\u2069"),
        ("zero\u200bwidth\ufeff", "zero\\u200bwidth\\ufeff"),
        ("esc\x1b[2Jclear\r", "esc\\x1b[2Jclear\\x0d"),
        ("nbsp\u00a0and\u2028sep", "nbsp\\xa0and\\u2028sep"),
        ("tag\U000e0041", "tag\\U000e0041"),
    ],
)
def test_hidden_characters_are_escaped(raw: str, shown: str) -> None:
    assert visible(raw) == shown
    assert hidden_names([raw])


def test_ordinary_text_is_unchanged_and_nothing_is_named() -> None:
    text = "printf 'héllo wörld\\n'\tls -la\nécho 日本語 ✓"
    assert visible(text) == text
    assert hidden_names([text]) == ()


def test_names_are_listed_once() -> None:
    assert hidden_names(["\u202e", "x\u202e\u200b"]) == (
        "U+202E RIGHT-TO-LEFT OVERRIDE",
        "U+200B ZERO WIDTH SPACE",
    )


def test_a_clip_says_how_much_it_cut() -> None:
    assert clip_marked("abcdef", 6) == "abcdef"
    assert clip_marked("abcdef", 2) == "ab… [4 more characters]"


def test_a_patch_lists_each_file_and_its_diff() -> None:
    action = ApplyPatchAction(
        patch="", cwd="/w", workdir=None, hunks=(),
        changes=(
            AddChange("/w/new", "hello\n"),
            UpdateChange("/w/old", "/w/moved", "one\n", "uno\n"),
            UpdateChange("/w/same", None, "a\n", "b\n"),
            DeleteChange("/w/gone", "bye\n"),
        ),
    )  # fmt: skip
    assert patch_files(action) == (
        "add /w/new", "move /w/old -> /w/moved", "update /w/same", "delete /w/gone"
    )  # fmt: skip
    diff = patch_diff(action)
    for line in ("+++ /w/new", "+hello", "--- /w/old", "+++ /w/moved", "-one", "+uno",
                 "-a", "+b", "--- /w/gone", "-bye"):  # fmt: skip
        assert line in diff.splitlines(), line
    assert patch_diff(action, 10).endswith(f"… [{len(diff) - 10} more characters]")
