"""script_cache: the cursor walk visits exactly what the child-list walks visit, on any script."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shellgate.router.bash.literal_words import glued_children
from shellgate.router.bash.parse import Node, parse_bash
from shellgate.router.bash.script_cache import _preorder, preorder_without_error

SCRIPTS = [
    "ls",
    "",
    "cd src && grep -rn 'x' . | head -5; echo \"$HOME\" > out.txt",
    "cat <<'EOF' > f\nline $x\nEOF",
    "for i in 1 2; do echo $i; done",
    "echo $(ls -la) `pwd` a{b,c} ~/x",
    "find . -del\\\nete",
    "a=1 b=2 env | sort && (cd x; make) || true &",
    "echo 'unterminated",
]


def _children_preorder(node: Node, named_only: bool) -> list[tuple[str, int, int]]:
    out = []
    stack = [node]
    while stack:
        current = stack.pop()
        out.append((current.type, current.start_byte, current.end_byte))
        kids = current.named_children if named_only else current.children
        stack.extend(reversed(kids))
    return out


def _check(script: str) -> None:
    tree = parse_bash(script)
    assert tree is not None
    walk = _preorder(tree.root_node)
    key = [(n.type, n.start_byte, n.end_byte) for n in walk.every]
    assert key == _children_preorder(tree.root_node, named_only=False)
    named = [(n.type, n.start_byte, n.end_byte) for n in walk.named]
    assert named == _children_preorder(tree.root_node, named_only=True)


@pytest.mark.parametrize("script", SCRIPTS)
def test_preorder_matches_child_walks(script: str) -> None:
    _check(script)


# Shell fragments glued at random: words, quoting, expansions, operators, redirects,
# heredocs, compound commands and broken syntax, so ERROR and MISSING nodes appear too.
_FRAGMENTS = st.sampled_from(
    ["ls", "-la", "x=1", "'a b'", '"$HOME"', "$(pwd)", "`id`", "${v:-d}", "a{b,c}", "~/x",
     "|", "&&", "||", ";", "&", ">", "2>&1", "<<'EOF'\nbody $x\nEOF\n", "(", ")", "{", "}",
     "for i in 1 2; do", "done", "if true; then", "fi", "\\\n", "#c\n", "'", '"', "\n"]
)  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(_FRAGMENTS, st.text(max_size=4)), max_size=12))
def test_preorder_matches_child_walks_on_any_script(parts: list[str]) -> None:
    _check(" ".join(parts))


def test_preorder_without_error_refuses_broken_scripts() -> None:
    assert preorder_without_error("echo 'unterminated") is None
    walk = preorder_without_error("ls -la")
    assert walk is not None and walk is preorder_without_error("ls -la")


def test_glued_children_only_looks_inside_the_command() -> None:
    script = "echo a\\\nb; ls -la"
    data = script.encode()
    tree = parse_bash(script)
    assert tree is not None
    commands = [n for n in _preorder(tree.root_node).named if n.type == "command"]
    assert glued_children(data, commands[0]) == {1, 2}
    assert glued_children(data, commands[1]) == set()
