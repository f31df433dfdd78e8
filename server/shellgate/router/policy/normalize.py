"""Deny-side normalisation: every command an argv may run, as forbidden/prompt rules see it.

shellgate's deliberate difference from Codex (docs/rules.md): before prompt and forbidden
rules match, launcher prefixes (`setsid`, `ionice -c3`, `flock F`, `script -c`, `chrt`,
`taskset`, `nice`, `sudo`, `env`, …) are stripped, git's global options before the subcommand
are skipped (`git -C . push` → `git push`), `sh -c`/`eval`/`find -exec` and scripts piped or
redirected into a shell are scanned, at any depth within the bounds below. Only the deny side
reads this: allow rules still see the commands as Codex does, so normalising can only make a
decision stricter.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from shellgate.router.bash.deny_scan import SCRIPT_SHELLS, blank_spans, deny_scan, script_tokens
from shellgate.router.bash.word_lowering import lower_script
from shellgate.router.policy.paths import command_basename
from shellgate.router.policy.unwrap import PREFIX_PROGRAMS, strip_prefix

Command = tuple[str, ...]

# Scripts re-parsed per argv (nested `sh -c`, `eval`, stdin scripts) and commands returned:
# both bound the work an adversarial script can cause (each level is a substring of the last).
MAX_NESTED_SCRIPTS = 64
MAX_NORMALISED_COMMANDS = 20_000

# git options that take the next word as their value (`git -C DIR push`).
_GIT_VALUE_OPTIONS = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--super-prefix",
     "--config-env", "--list-cmds", "--attr-source"}
)  # fmt: skip

# launcher -> (options taking a value, number of operands before the command).
_LAUNCHERS: dict[str, tuple[frozenset[str], int]] = {
    "setsid": (frozenset(), 0),
    "ionice": (frozenset({"-c", "-n", "--class", "--classdata"}), 0),
    "chrt": (
        frozenset({"-T", "-P", "-D", "--sched-runtime", "--sched-period", "--sched-deadline"}),
        1,
    ),
    "taskset": (frozenset(), 1),
    "flock": (frozenset({"-w", "--wait", "--timeout", "-E", "--conflict-exit-code"}), 1),
    "busybox": (frozenset(), 0),
    "builtin": (frozenset(), 0),
    "unbuffer": (frozenset(), 0),
    "caffeinate": (frozenset({"-t", "-w"}), 0),
}
# Options after which these launchers run no command (they act on a running process).
_PID_OPTIONS = frozenset({"-p", "--pid", "-P", "--pgid", "-u", "--uid"})
_SCRIPT_VALUE_OPTIONS = frozenset(
    {"-E", "--echo", "-I", "--log-in", "-O", "--log-out", "-B", "--log-io", "-T",
     "--log-timing", "-m", "--logging-format"}
)  # fmt: skip
_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})


def skip_git_global_options(cmd: Sequence[str]) -> Command | None:
    """`git SUBCOMMAND …` with the global options before the subcommand removed, else None."""
    i = 1
    while i < len(cmd) and cmd[i].startswith("-"):
        token = cmd[i]
        i += 2 if token in _GIT_VALUE_OPTIONS else 1
    if i == 1 or i >= len(cmd):
        return None
    return (cmd[0], *cmd[i:])


def _launched(cmd: Sequence[str]) -> tuple[Command | None, str | None]:
    """(command a launcher runs, shell script it runs) — either may be None."""
    program = command_basename(cmd[0])
    if program == "script":
        return None, _script_command(cmd)
    value_options, operands = _LAUNCHERS[program]
    i = 1
    while i < len(cmd) and cmd[i].startswith("-") and cmd[i] != "-":
        token = cmd[i]
        if token == "--":
            i += 1
            break
        if token in _PID_OPTIONS and program in ("ionice", "chrt", "taskset"):
            return None, None
        if program == "flock" and token in ("-c", "--command"):
            return None, cmd[i + 1] if i + 1 < len(cmd) else None
        if program == "ionice" and len(token) > 2 and token[:2] in ("-c", "-n"):
            i += 1  # `-c3`: the value is glued on
            continue
        i += 2 if token in value_options else 1
    if program == "flock" and i + 1 < len(cmd) and cmd[i + 1] in ("-c", "--command"):
        return None, cmd[i + 2] if i + 2 < len(cmd) else None
    rest = tuple(cmd[i + operands :])
    return (rest or None), None


def _script_command(cmd: Sequence[str]) -> str | None:
    """The `-c CMD` of util-linux `script` (also glued: `-qc CMD`, `--command=CMD`)."""
    i = 1
    while i < len(cmd):
        token = cmd[i]
        if token.startswith("--command="):
            return token.split("=", 1)[1]
        if token == "--command" or (
            token.startswith("-") and not token.startswith("--") and token.endswith("c")
        ):
            return cmd[i + 1] if i + 1 < len(cmd) else None
        i += 2 if token in _SCRIPT_VALUE_OPTIONS else 1
    return None


def _shell_script(cmd: Sequence[str]) -> str | None:
    """The script of `sh [-opts] -c SCRIPT …` (any POSIX-like shell, `-c` in a cluster)."""
    if command_basename(cmd[0]) not in SCRIPT_SHELLS:
        return None
    for i, token in enumerate(cmd[1:], start=1):
        if not token.startswith("-") or token == "--":
            return None
        if not token.startswith("--") and "c" in token[1:]:
            return cmd[i + 1] if i + 1 < len(cmd) else None
    return None


def _find_commands(cmd: Sequence[str]) -> Iterator[Command]:
    """The commands of `find … -exec CMD … ;|+` (and -execdir, -ok, -okdir)."""
    i = 1
    while i < len(cmd):
        if cmd[i] in _FIND_EXEC:
            end = i + 1
            while end < len(cmd) and cmd[end] not in (";", "+"):
                end += 1
            if end > i + 1:
                yield tuple(cmd[i + 1 : end])
            i = end
        i += 1


def _children(cmd: Command) -> tuple[list[Command], list[str]]:
    """What `cmd` runs directly: (commands, scripts to scan)."""
    program = command_basename(cmd[0])
    if program == "git":
        skipped = skip_git_global_options(cmd)
        return ([skipped] if skipped is not None and skipped != cmd else []), []
    if program == "eval":
        return [], [" ".join(cmd[1:])]
    if program == "find":
        return list(_find_commands(cmd)), []
    script = _shell_script(cmd)
    if script is not None:
        return [], [script]
    if program in _LAUNCHERS or program == "script":
        launched, shell_script = _launched(cmd)
        return ([launched] if launched else []), ([shell_script] if shell_script else [])
    if program in PREFIX_PROGRAMS:
        stripped = strip_prefix(cmd)
        return ([stripped] if stripped else []), []
    return [], []


@dataclass(frozen=True, slots=True)
class Normalised:
    """Every command an argv may run, and whether some script in it could not be lowered."""

    commands: tuple[Command, ...]
    # A script (top-level or nested) that word-only lowering rejects: what it runs is not
    # fully known, so the literal-name check of docs/rules.md applies.
    opaque: bool
    # The literal words of the opaque scripts, less commands that certainly run nothing else.
    opaque_tokens: frozenset[str]


def normalise(argv: Sequence[str]) -> Normalised:
    """Every command `argv` may run, normalised (argv itself first), within the bounds."""
    opaque = False
    tokens: set[str] = set()
    out: list[Command] = []
    stack: list[Command] = [tuple(argv)] if argv else []
    scripts_left = MAX_NESTED_SCRIPTS
    while stack and len(out) < MAX_NORMALISED_COMMANDS:
        cmd = stack.pop()
        out.append(cmd)
        commands, scripts = _children(cmd)
        found = list(commands)
        for script in scripts:
            if scripts_left <= 0:
                break
            scripts_left -= 1
            scanned = deny_scan(script)
            if scanned is None:
                opaque = True
                tokens |= script_tokens(script)
                continue
            if lower_script(scanned.runnable) is None:
                opaque = True
                inert = [
                    span
                    for words, span in zip(scanned.commands, scanned.plain_spans, strict=True)
                    if span is not None and _children(words) == ([], [])
                ]
                tokens |= script_tokens(blank_spans(scanned.runnable, inert))
            found += scanned.commands
            scripts += [s for s in scanned.stdin_scripts if s not in scripts]
        stack.extend(reversed(found))
    if stack:  # bound reached: what is left unseen counts as opaque
        opaque = True
        tokens |= script_tokens("\n".join(argv))
    return Normalised(tuple(out), opaque, frozenset(tokens))
