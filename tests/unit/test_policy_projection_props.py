"""Property tests: projections B/C and display never crash on bash-like input and agree."""

from __future__ import annotations

import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shellgate.router.approval_identity import canonicalize_command_for_approval
from shellgate.router.display.parse_command import parse_command
from shellgate.router.policy_projection import (
    commands_for_exec_policy,
    literal_commands_for_argv,
    lowered_commands_for_argv,
    parse_shell_lc_single_command_prefix,
)

# Fragments chosen to hit every construct the grammar knows, including broken ones.
FRAGMENTS = [
    "ls", "rm", "-rf", "git", "status", "echo", "x", "a=b", "=sh", "~", "*", "?", "[a]",
    "{a,b}", "\\", "$HOME", "${X:-y}", "$(", ")", "`", "(", "{", "}", "'q w'", '"d q"',
    '"$x"', '"\\n"', '"\\$"', "$'c'", "&&", "||", "|", ";", "&", ";;", "|&", ">", ">>",
    "2>&1", "<", "<<EOF", "<<'EOF'", "<<<", "EOF", "\n", " ", "  ", "#c", "if", "then",
    "fi", "for", "in", "do", "done", "case", "esac", "!", "héllo", "\t", "=", "[[", "]]",
]  # fmt: skip

scripts = st.lists(st.sampled_from(FRAGMENTS), max_size=40).map(" ".join) | st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=200
)
shells = st.sampled_from(["bash", "/bin/zsh", "sh", "/tmp/bash"])
flags = st.sampled_from(["-lc", "-c", "-l"])

PROPS = settings(
    max_examples=300,
    deadline=2000,
    suppress_health_check=[HealthCheck.too_slow],
)


@PROPS
@given(shell=shells, flag=flags, script=scripts)
def test_projections_never_crash_and_agree(shell: str, flag: str, script: str) -> None:
    argv = [shell, flag, script]
    started = time.monotonic()
    projection = commands_for_exec_policy(argv)
    lowered = lowered_commands_for_argv(argv)
    scanned = literal_commands_for_argv(argv)
    prefix = parse_shell_lc_single_command_prefix(argv)
    canonical = canonicalize_command_for_approval(argv)
    display = parse_command(argv)
    assert time.monotonic() - started < 2

    assert projection.commands and len(projection.spans) == len(projection.commands)
    assert display
    size = len(script.encode("utf-8"))
    if lowered:
        # A lowerable script is projected as its commands, and the scan sees exactly them.
        assert projection.commands == tuple(c.words for c in lowered)
        assert not projection.used_complex_parsing
        assert scanned == lowered
        assert all(0 <= c.span.start <= c.span.end <= size for c in lowered)
        starts = [c.span.start for c in lowered]
        assert starts == sorted(starts)
        if len(lowered) == 1:
            assert canonical == list(lowered[0].words)
    elif prefix is not None:
        assert projection.commands == (tuple(prefix),)
        assert projection.used_complex_parsing
    else:
        assert projection.commands == (tuple(argv),)
        assert projection.spans == (None,)
    if lowered is None or len(lowered) != 1:
        if shell != "/tmp/bash" and flag != "-l":
            assert canonical == ["__codex_shell_script__", flag, script]
        else:
            assert canonical == argv
    # Same input, same output (the per-script memo must not change results).
    assert commands_for_exec_policy(list(argv)) == projection
    assert canonicalize_command_for_approval(list(argv)) == canonical


@PROPS
@given(argv=st.lists(st.sampled_from([*FRAGMENTS, "cat", "sed", "-n", "1,5p", "cd"]), max_size=12))
def test_display_of_raw_argv_never_crashes(argv: list[str]) -> None:
    parsed = parse_command(argv)
    # Only connectors or `cd` parts summarise to nothing (as in Codex); otherwise something.
    if any(token not in ("&&", "||", "|", ";") for token in argv) and "cd" not in argv:
        assert parsed
    assert parse_command(argv) == parsed


@settings(max_examples=150, deadline=2000)
@given(word=st.text(alphabet="ab-=.{}*?[]\\~^#$`/", min_size=1, max_size=8))
def test_unquoted_expanding_words_never_lower(word: str) -> None:
    lowered = lowered_commands_for_argv(["bash", "-lc", f"echo {word}"])
    if lowered:
        # Whatever lowered is literal text: no expanding character, no leading `=`.
        for command in lowered:
            for token in command.words[1:]:
                assert not token.startswith("=")
                assert not set(token) & set("{}*?[]\\~^#$`")
