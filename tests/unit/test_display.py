"""Display metadata: `parse_command` and its helpers (spec 03 §D)."""

from __future__ import annotations

import pytest
from shellgate.router.bash.shlex_rs import shlex_split
from shellgate.router.display.formatting import short_display_path
from shellgate.router.display.parse_command import (
    ListFiles,
    ParsedCommand,
    Read,
    Search,
    Unknown,
    is_small_formatting_command,
    join_paths,
    parse_command,
)


def split(text: str) -> list[str]:
    words = shlex_split(text)
    assert words is not None
    return words


def lc(script: str) -> list[str]:
    return ["bash", "-lc", script]


CASES: list[tuple[list[str], list[ParsedCommand]]] = [
    (["git", "status"], [Unknown("git status")]),
    (split("git grep TODO src"), [Search("git grep TODO src", "TODO", "src")]),
    (
        split("git ls-files --exclude target src"),
        [ListFiles("git ls-files --exclude target src", "src")],
    ),
    (lc("git status | wc -l"), [Unknown("git status | wc -l")]),
    (
        lc('rg -n "navigate-to-route" -S'),
        [Search("rg -n navigate-to-route -S", "navigate-to-route", None)],
    ),
    (lc('rg -n "BUG|FIXME" -S | head -n 200'), [Search("rg -n 'BUG|FIXME' -S", "BUG|FIXME", None)]),
    (lc("rg --files webview/src | sed -n"), [ListFiles("rg --files webview/src", "webview")]),
    (split("rg --files | nl -ba | foo"), [Unknown("rg --files '|' nl -ba '|' foo")]),
    (split("rg --files | nl -ba"), [ListFiles("rg --files", None)]),
    (
        split("rg --files-with-matches TODO src"),
        [Search("rg --files-with-matches TODO src", "TODO", "src")],
    ),
    (
        lc("bat --theme TwoDark README.md"),
        [Read("bat --theme TwoDark README.md", "README.md", "README.md")],
    ),
    (lc("less -p TODO README.md"), [Read("less -p TODO README.md", "README.md", "README.md")]),
    (split("cd foo && cat foo.txt"), [Read("cat foo.txt", "foo.txt", "foo/foo.txt")]),
    (split("cd -- -weird && cat foo.txt"), [Read("cat foo.txt", "foo.txt", "-weird/foo.txt")]),
    (split("cd dir1 dir2 && cat foo.txt"), [Read("cat foo.txt", "foo.txt", "dir2/foo.txt")]),
    (split("cd a && cd /abs && cat f"), [Read("cat f", "f", "/abs/f")]),
    (lc("cd foo && bar"), [Unknown("cd foo && bar")]),
    (lc("cd foo && cat foo.txt"), [Read("cat foo.txt", "foo.txt", "foo/foo.txt")]),
    (split("exa -I target ."), [ListFiles("exa -I target .", ".")]),
    (split("du -d 2 ."), [ListFiles("du -d 2 .", ".")]),
    (lc("head -n 50 Cargo.toml"), [Read("head -n 50 Cargo.toml", "Cargo.toml", "Cargo.toml")]),
    (lc("tail -n +522 README.md"), [Read("tail -n +522 README.md", "README.md", "README.md")]),
    (split("head -n x file"), [Unknown("head -n x file")]),
    (split("fd -t f src/"), [ListFiles("fd -t f src/", "src")]),
    (split("fd main"), [Search("fd main", "main", None)]),
    (split("find . -name '*.rs'"), [Search("find . -name '*.rs'", "*.rs", ".")]),
    (split("find src -type f"), [ListFiles("find src -type f", "src")]),
    (
        split("grep -R COD`EX_SANDBOX -n"),
        [Search("grep -R 'COD`EX_SANDBOX' -n", "COD`EX_SANDBOX", None)],
    ),
    (split("grep -e foo -e bar src/x"), [Search("grep -e foo -e bar src/x", "foo", "x")]),
    (
        lc('cd /Users/p/code && rg -n "codex_api" codex-rs -S | head -n 50'),
        [Search("rg -n codex_api codex-rs -S", "codex_api", "codex-rs")],
    ),
    (
        lc("python -c \"import os; print(os.listdir('.'))\""),
        [ListFiles("python -c \"import os; print(os.listdir('.'))\"", None)],
    ),
    (lc("yes | rg --files"), [ListFiles("rg --files", None)]),
    (split("rg --files && true"), [ListFiles("rg --files", None)]),
    (split("echo hi && cat x"), [Read("cat x", "x", "x")]),
    (lc("cat a.txt && cat a.txt"), [Read("cat a.txt", "a.txt", "a.txt")]),
    (lc("cat a b"), [Unknown("cat a b")]),
    (lc("wc -l"), [Unknown("wc -l")]),
    (lc("ls ~"), [Unknown("ls ~")]),
    (lc(""), [Unknown("")]),
    (["powershell", "-Command", "Get-ChildItem"], [Unknown("Get-ChildItem")]),
    (["/tmp/bash", "-lc", "cat x"], [Unknown("/tmp/bash -lc 'cat x'")]),
    (["ls", "a\0b"], [ListFiles("<command included NUL byte>", "a\0b")]),
]


@pytest.mark.parametrize(("argv", "expected"), CASES, ids=[" ".join(a) for a, _ in CASES])
def test_parse_command(argv: list[str], expected: list[ParsedCommand]) -> None:
    assert parse_command(argv) == expected


@pytest.mark.parametrize(
    ("tokens", "expected"),
    [
        (["wc", "-x"], True),
        (["xargs"], True),
        (["xargs", "-n", "1", "rg", "TODO"], True),
        (["xargs", "perl", "-pi", "-e", "s/a/b/"], False),
        (["xargs", "-I", "{}", "sed", "-i", "s/a/b/", "{}"], False),
        (["xargs", "--", "sed", "--in-place", "x"], False),
        (["xargs", "rg", "--replace", "x"], False),
        (["xargs", "ruby", "-e", "x"], True),
        (["awk", "{print $1}"], True),
        (["awk", "{print $1}", "Cargo.toml"], False),
        (["awk", "-f", "script.awk", "Cargo.toml"], False),
        (["head"], True),
        (["head", "-n", "40"], True),
        (["head", "-n40"], True),
        (["head", "file.txt"], False),
        (["head", "-n", "40", "file.txt"], False),
        (["tail", "-n", "+10"], True),
        (["tail", "-c", "+10"], True),
        (["tail", "-n", "+10", "file.txt"], False),
        (["sed"], True),
        (["sed", "-n", "10p"], True),
        (["sed", "-n", "10p", "file.txt"], False),
        (["sed", "-n", "-e", "10p", "file.txt"], False),
        (["sed", "-n", "10p", "--", "file.txt"], False),
        (["sed", "-n", "p", "file.txt"], True),
        (["sed", "-n", "+10p", "file.txt"], True),
        (["nl", "-ba"], False),
        ([], False),
    ],
)
def test_is_small_formatting_command(tokens: list[str], expected: bool) -> None:
    assert is_small_formatting_command(tokens) is expected


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("webview/src", "webview"),
        ("foo/src/", "foo"),
        ("packages/app/node_modules/", "app"),
        ("./dist", "."),
        ("core/src/spawn.rs", "spawn.rs"),
        ("pkg\\src\\main.rs", "main.rs"),
        ("src", "src"),
        ("/", ""),
    ],
)
def test_short_display_path(path: str, expected: str) -> None:
    assert short_display_path(path) == expected


@pytest.mark.parametrize(
    ("base", "rel", "expected"),
    [
        ("foo", "bar.txt", "foo/bar.txt"),
        ("foo/", "bar.txt", "foo/bar.txt"),
        ("foo", "/abs", "/abs"),
        ("foo", "C:\\x", "C:\\x"),
        ("foo", "\\\\srv\\share", "\\\\srv\\share"),
        ("", "x", "x"),
    ],
)
def test_join_paths(base: str, rel: str, expected: str) -> None:
    assert join_paths(base, rel) == expected


def test_many_commands_simplify_up_to_the_parse_limits() -> None:
    tail = "cd x && true && nl -ba && cat f"
    assert parse_command(lc("echo a && " * 20_000 + tail)) == [Read("cat f", "f", "x/f")]
    # Past the parse limits (bash/parse.py: 512 KiB, 200 000 nodes) the script is not
    # parsed, as Codex treats a script it cannot parse: one Unknown for the whole command.
    big = "echo a && " * 60_000 + tail
    assert [type(c).__name__ for c in parse_command(lc(big))] == ["Unknown"]
