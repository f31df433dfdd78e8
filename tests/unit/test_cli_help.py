"""Both CLIs, in-process: every flag in the README's tables, an example in every subcommand's
help, and `policy check` parsing its argv as Codex does (as processes — --version, a bad
--log-level in one line, Codex's own execpolicy check: tests/integration/test_cli_processes.py)."""

from __future__ import annotations

import argparse
import json
import re
import shlex
from pathlib import Path

import pytest
from shellgate.execserver import cli as execserver_cli
from shellgate.router.cli.main import SUBCOMMANDS, build_parser
from shellgate.router.cli.main import main as router_main

from tests.paths import REPO_ROOT

README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _commands() -> dict[str, argparse.ArgumentParser]:
    """Every leaf command's parser, keyed by how the README names it."""
    found: dict[str, argparse.ArgumentParser] = {}
    for name in SUBCOMMANDS:
        parser = _subparsers(build_parser(name))[name]
        if name == "policy":
            found["shellgate policy check"] = _subparsers(parser)["check"]
        elif name == "audit":
            for sub, sub_parser in _subparsers(parser).items():
                found[f"shellgate audit {sub}"] = sub_parser
        else:
            found[f"shellgate {name}"] = parser
    for name, parser in _subparsers(execserver_cli.build_parser()).items():
        found[f"shellgate-execserver {name}"] = parser
    return found


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    return {
        opt for action in parser._actions for opt in action.option_strings
        # Hidden flags (help=SUPPRESS) are internal: serve --detach's --detached-log.
        if opt not in ("-h", "--help") and action.help != argparse.SUPPRESS
    }  # fmt: skip


def _readme_tables() -> dict[str, set[str]]:
    """`### \\`command\\`` heading -> the flags in the first column of its table."""
    tables: dict[str, set[str]] = {}
    section = README.split("## Command-line flags", 1)[1].split("\n## ", 1)[0]
    for block in re.split(r"^### ", section, flags=re.M)[1:]:
        heading = re.match(r"`([^`]+)`", block)
        assert heading is not None, block[:80]
        rows = [line for line in block.splitlines() if line.startswith("| `")]
        tables[heading.group(1)] = {
            cell.split()[0] for row in rows for cell in re.findall(r"`(-[^`]+)`", row.split("|")[1])
        }
    return tables


def test_every_flag_is_in_the_readme_tables_and_only_those() -> None:
    tables = _readme_tables()
    commands = _commands()
    flagless = {name for name, parser in commands.items() if not _flags(parser)}
    # Commands without flags are named in the prose under the tables, not given a table.
    for name in flagless:
        assert f"`{name}" in README.split("## Command-line flags", 1)[1], name
    assert set(tables) == set(commands) - flagless
    for name, documented in tables.items():
        assert documented == _flags(commands[name]), name


def test_top_level_version_is_documented() -> None:
    assert "`shellgate --version`" in README and "`shellgate-execserver --version`" in README


def _example_commands(epilog: str, name: str) -> list[list[str]]:
    """The argv words after the program of each `name …` command in the examples (pipelines,
    `&&` chains and redirections split the way sh does)."""
    found: list[list[str]] = []
    for line in epilog.replace("\\\n", " ").splitlines()[1:]:
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = "#"
        segment: list[str] = []
        for word in [*lexer, "&&"]:
            if word in ("&&", "|", ">", ">>", ";"):
                if segment[: len(name.split())] == name.split():
                    found.append(segment[1:])
                segment = [] if word != ">>" and word != ">" else ["<redirect>"]
            else:
                segment.append(word)
    return found


def test_every_subcommand_help_shows_an_example_that_parses() -> None:
    for name, parser in _commands().items():
        epilog = parser.epilog or ""
        assert epilog.startswith("examples:"), name
        examples = _example_commands(epilog, name)
        if name == "shellgate token":
            # Its output is what the example uses: `$(shellgate token)` inside grpcurl.
            assert "$(shellgate token)" in epilog
            continue
        assert examples, f"{name}: no example in {epilog!r}"
        top = build_parser(name.split()[1]) if name.startswith("shellgate ") else (
            execserver_cli.build_parser()
        )  # fmt: skip
        for words in examples:
            try:
                top.parse_args(words)
            except SystemExit as exc:  # argparse refuses: the help teaches a wrong command
                raise AssertionError(f"{name}: example does not parse: {words}") from exc


RULES = 'prefix_rule(pattern=["git", "push"], decision="forbidden")\n'
# Argument lists after `--rules FILE` that Codex 0.169's clap parser accepts: the command is
# everything from its first word on (options included), one file per --rules.
# (args, whether the command checked starts with `git push`)
ARGVS = [
    (["git", "push"], True),
    (["git", "push", "--pretty"], True),
    (["--", "git", "push"], True),
    (["--pretty", "--", "git", "push"], True),
    (["git", "-c", "x", "push"], False),
    (["git", "push", "--", "--rules", "x"], True),
]


@pytest.mark.parametrize(("args", "pushes"), ARGVS, ids=[" ".join(a) for a, _ in ARGVS])
def test_policy_check_reads_the_command_as_codex(
    tmp_path: Path, args: list[str], pushes: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = tmp_path / "f.rules"
    rules.write_text(RULES, encoding="utf-8")
    assert router_main(["policy", "check", "--rules", str(rules), *args]) == 0
    ours = capsys.readouterr().out
    assert json.loads(ours).get("decision") == ("forbidden" if pushes else None)
    # Codex's own `execpolicy check` on the same argv: tests/integration/test_cli_processes.py.


def test_policy_check_without_a_command_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = tmp_path / "f.rules"
    rules.write_text(RULES, encoding="utf-8")
    assert router_main(["policy", "check", "--rules", str(rules)]) == 2
    assert "a command to check is required" in capsys.readouterr().err
