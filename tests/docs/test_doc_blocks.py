"""Every shell block of README.md and docs/*.md runs as written, or says why it cannot.

One case per block, named `FILE:LINE:MODE` (run, parse, skip), so `pytest -rA` lists every
block with its status: run against real servers (a default `shellgate serve` on the
documented 127.0.0.1:50051, with its generated token, found by `shellgate token` and
`shellgate call` as a user's would be), parsed by the real command-line parsers, or skipped
with the reason its marker gives (`tests/docs/doc_blocks.py` lists the markers). A block
whose fixed port is already taken on this machine is skipped, naming the port. A changed
flag or default breaks a case here, not a user.
"""

from __future__ import annotations

import contextlib
import io
import shlex
from pathlib import Path

import pytest
from shellgate.execserver import cli as execserver_cli
from shellgate.router.cli.main import SUBCOMMANDS, build_parser

from tests.docs.block_runner import installed, port_taken, ports_of, run_block
from tests.docs.doc_blocks import Block, doc_files, every_block, logical_lines

BLOCKS = every_block()
_SEPARATORS = ("&&", "||", "|", ";", "&", ">", ">>", "<", "<<", "(", ")")


def _status(block: Block) -> str:
    d = block.directives
    if d.skip:
        return f"skip ({d.skip})"
    if d.parse:
        return f"parse ({d.parse})"
    extras = [f"with {s}" for s in d.with_servers] + [f"background {b}" for b in d.background]
    extras += [f"requires {' '.join(d.requires)}"] if d.requires else []
    extras += [f"optional {' '.join(d.optional)}"] if d.optional else []
    extras += [f"stub {c} ({r})" for c, r in d.stubs] + (["checkout"] if d.checkout else [])
    return "run" + (f" ({'; '.join(extras)})" if extras else "")


def test_every_block_is_listed_with_its_status() -> None:
    """The list (`-rA` prints it): each block and how the case below treats it."""
    assert BLOCKS, "no shell block found"
    print("\n".join(f"{block.name}: {_status(block)}" for block in BLOCKS))


def test_markers_stand_right_before_a_block() -> None:
    """A `doc-test:` comment anywhere else would qualify nothing: refused."""
    for path in doc_files():
        lines = path.read_text(encoding="utf-8").splitlines()
        for index, line in enumerate(lines):
            if "doc-test:" not in line or not line.lstrip().startswith("<!--"):
                continue
            after = next((ln for ln in lines[index + 1 :] if ln.strip()), "")
            assert after.startswith("```") or after.lstrip().startswith("<!--"), (
                f"{path.name}:{index + 1}: a doc-test marker not right before a block"
            )


def commands_in(script: str) -> list[list[str]]:
    """Each `shellgate …` / `shellgate-execserver …` command of a script, as argv words."""
    found: list[list[str]] = []
    for line in logical_lines(script):
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = "#"
        segment: list[str] = []
        for word in [*lexer, "&&"]:
            if word in _SEPARATORS:
                if segment and segment[0] in ("shellgate", "shellgate-execserver"):
                    found.append(segment)
                segment = []
            else:
                segment.append(word)
    return found


def _parses(words: list[str]) -> str:
    """'' when the real parser accepts the command, else what argparse said."""
    if words[0] == "shellgate":
        chosen = words[1] if len(words) > 1 and words[1] in SUBCOMMANDS else None
        parser = build_parser(chosen)
    else:
        parser = execserver_cli.build_parser()
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said), contextlib.redirect_stdout(io.StringIO()):
            parser.parse_args(words[1:])
    except SystemExit as exc:
        return said.getvalue().strip() or f"exit {exc.code}"
    return ""


@pytest.mark.parametrize("block", BLOCKS, ids=[f"{b.name}:{b.mode}" for b in BLOCKS])
def test_doc_block(block: Block, tmp_path: Path) -> None:
    """The block runs to exit 0 (or parses, or is skipped with its marker's reason)."""
    d = block.directives
    if d.skip:
        pytest.skip(f"{block.name}: {d.skip}")
    if d.parse:
        commands = commands_in(block.script)
        assert commands, f"{block.name}: `parse`, but no shellgate command in it"
        problems = {" ".join(c): p for c in commands if (p := _parses(c))}
        assert not problems, f"{block.name}: commands the CLI refuses: {problems}"
        return
    missing = [t for t in d.requires if not installed(t, _path_with_tools(tmp_path))]
    if missing:
        pytest.skip(f"{block.name}: needs {', '.join(missing)} (not installed here)")
    taken = [p for p in ports_of(block) if port_taken(p)]
    if taken:
        pytest.skip(f"{block.name}: 127.0.0.1:{taken[0]}, the port it uses, is taken here")
    outcome = run_block(block, tmp_path)
    assert outcome.returncode == 0, (
        f"{block.name} exited {outcome.returncode}:\n{block.script}\n--- stdout\n"
        f"{outcome.stdout[-1500:]}\n--- stderr\n{outcome.stderr[-3000:]}"
    )
    if outcome.skipped_tools:
        print(f"{block.name}: ran without {', '.join(outcome.skipped_tools)} (not installed): "
              "their commands were skipped")  # fmt: skip


def _path_with_tools(tmp_path: Path) -> str:
    """The PATH a block gets (its wrappers and .tools' binaries first)."""
    from tests.docs.block_runner import block_environ

    return block_environ(tmp_path / "probe")["PATH"]


def test_commands_in_splits_like_sh() -> None:
    """The parse check finds every shellgate command, not the words around it."""
    script = (
        'x=1 && shellgate call --cmd "a b" | cat\nshellgate mcp \\\n  --http 127.0.0.1:1  # c\n'
    )
    assert commands_in(script) == [["shellgate", "call", "--cmd", "a b"],
                                   ["shellgate", "mcp", "--http", "127.0.0.1:1"]]  # fmt: skip
    assert _parses(["shellgate", "call", "--no-such-flag"])
    assert not _parses(["shellgate-execserver", "codex-check", "--environment", "x"])
