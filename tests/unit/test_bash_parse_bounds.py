"""The parse bounds of bash/parse.py: past them a script is not parsed (Codex's fallback)."""

from __future__ import annotations

from shellgate.router.bash.parse import MAX_PIPES, parse_bash


def test_a_long_pipeline_ending_in_a_syntax_error_is_not_parsed() -> None:
    # tree-sitter-bash's error recovery is quadratic here: 20 000 stages and a trailing `|`
    # take 15 s and 3.3 GiB when parsed.
    assert parse_bash("a | " * 20_000) is None


def test_pipelines_up_to_the_bound_are_parsed() -> None:
    tree = parse_bash("a | " * (MAX_PIPES - 1) + "a")
    assert tree is not None and not tree.root_node.has_error
    # `||` is not a pipe.
    assert parse_bash("a || " * (MAX_PIPES + 10) + "a") is not None
