"""Known-safe heuristics (spec 04 §3.1): `is_safe_to_call_with_exec`, git read-only list."""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence

from shellgate.router.policy.paths import command_basename
from shellgate.router.policy_projection import parse_shell_lc_plain_commands

# numfmt and tac are GNU coreutils: safe only where the host is Linux.
HOST_IS_LINUX = sys.platform.startswith("linux")

_ALWAYS_SAFE = frozenset(
    [
        "cat",
        "cd",
        "cut",
        "echo",
        "expr",
        "false",
        "grep",
        "head",
        "id",
        "ls",
        "nl",
        "paste",
        "pwd",
        "rev",
        "seq",
        "stat",
        "tail",
        "tr",
        "true",
        "uname",
        "uniq",
        "wc",
        "which",
        "whoami",
    ]
)
_LINUX_SAFE = frozenset({"numfmt", "tac"})
_FIND_UNSAFE = frozenset(
    ["-exec", "-execdir", "-ok", "-okdir", "-delete", "-fls", "-fprint", "-fprint0", "-fprintf"]
)
_RG_UNSAFE = frozenset({"--search-zip", "-z", "--pre", "--hostname-bin"})
_SED_PRINT = re.compile(r"[0-9]+(,[0-9]+)?p")

# Global git options that redirect config or the repository; value taken from the next token.
_GIT_REDIRECT = frozenset(
    [
        "-C",
        "-c",
        "--config-env",
        "--exec-path",
        "--git-dir",
        "--namespace",
        "--super-prefix",
        "--work-tree",
    ]
)
_GIT_REDIRECT_INLINE = tuple(
    f"{o}="
    for o in [
        "--config-env",
        "--exec-path",
        "--git-dir",
        "--namespace",
        "--super-prefix",
        "--work-tree",
    ]
)
_GIT_READ_ONLY = frozenset({"status", "log", "diff", "show", "branch"})
_GIT_BRANCH_FLAGS = frozenset(
    ["--list", "-l", "--show-current", "-a", "--all", "-r", "--remotes", "-v", "-vv", "--verbose"]
)


def _is_redirecting(token: str) -> bool:
    if token in _GIT_REDIRECT:
        return True
    if (token.startswith("-C") or token.startswith("-c")) and len(token) > 2:
        return True
    return token.startswith(_GIT_REDIRECT_INLINE)


def _git_is_read_only(argv: Sequence[str]) -> bool:
    args = list(argv[1:])
    if any(_is_redirecting(t) for t in args):
        return False
    index: int | None = None
    i = 0
    while i < len(args):
        token = args[i]
        if token in _GIT_REDIRECT:
            i += 2
            continue
        if token.startswith("-"):
            i += 1
            continue
        index = i
        break
    if index is None or args[index] not in _GIT_READ_ONLY:
        return False
    if any(t in ("-p", "--paginate") for t in args[:index]):
        return False
    sub, rest = args[index], args[index + 1 :]
    for token in rest:
        if token in ("--output", "--ext-diff", "--textconv", "--exec", "--paginate"):
            return False
        if token.startswith(("--output=", "--exec=")):
            return False
    if sub == "branch" and rest:
        return all(t in _GIT_BRANCH_FLAGS or t.startswith("--format=") for t in rest)
    return True


def is_safe_to_call_with_exec(argv: Sequence[str], *, linux: bool = HOST_IS_LINUX) -> bool:
    """Whether one exec'd argv is known not to write or run anything (keyed by basename)."""
    if not argv:
        return False
    program = command_basename(argv[0])
    if program in _ALWAYS_SAFE:
        return True
    if program in _LINUX_SAFE:
        return linux
    if program == "base64":
        return not any(
            t in ("-o", "--output")
            or t.startswith("--output=")
            or (t.startswith("-o") and len(t) > 2)
            for t in argv
        )
    if program == "find":
        return not any(t in _FIND_UNSAFE for t in argv)
    if program == "rg":
        return not any(t in _RG_UNSAFE or t.startswith(("--pre=", "--hostname-bin=")) for t in argv)
    if program == "sed":
        return len(argv) in (3, 4) and argv[1] == "-n" and _SED_PRINT.fullmatch(argv[2]) is not None
    if program == "git":
        return _git_is_read_only(argv)
    return False


def is_known_safe_command(argv: Sequence[str], *, linux: bool = HOST_IS_LINUX) -> bool:
    """Known safe: the argv itself, or every plain command of a bash/zsh/sh wrapper script."""
    command = ["bash" if t == "zsh" else t for t in argv]
    if is_safe_to_call_with_exec(command, linux=linux):
        return True
    commands = parse_shell_lc_plain_commands(command)
    if not commands:
        return False
    return all(is_safe_to_call_with_exec(c, linux=linux) for c in commands)
