"""A pending approval judged at a glance: why it asks in plain words, and its risk markers.

Read from the view alone (`PendingView`: kind, matched rules, segments, patch files, hidden
characters, env overrides), so the markers say only what the rule or heuristic that asked, and the words
of the command, show — a hint to read the command, never a verdict instead of it.
"""

from __future__ import annotations

import os.path
import shlex

from shellgate.router.runtime.approvals.desk import PendingView

__all__ = ["plain_reason", "risk_markers"]

_NETWORK = frozenset(
    {"curl", "wget", "ssh", "scp", "sftp", "rsync", "nc", "ncat", "netcat", "telnet", "ftp",
     "socat", "aria2c"}
)  # fmt: skip
_ESCALATION = frozenset({"sudo", "su", "doas", "pkexec", "runuser", "chroot", "nsenter"})
_WRAPPERS = frozenset({"env", "nohup", "nice", "timeout", "time", "xargs", "exec", "command"})
_DESTRUCTIVE = frozenset({"rm", "dd", "mkfs", "shred", "truncate", "chmod", "chown", "kill"})


def plain_reason(view: PendingView) -> str:
    """Why a person is asked, in plain words (the kind's name stays shown beside it)."""
    if view.kind == "sandbox_retry":
        return (
            "It failed inside the sandbox: approving runs it again WITHOUT the sandbox "
            "(full access to files and network)."
        )
    if view.kind == "apply_patch":
        return (
            "The patch changes files the turn's sandbox does not let it write, or the "
            "approval policy asks before every patch."
        )
    if any(rule.startswith("prefix_rule(") for rule in view.matched_rules):
        return "A rule of this router asks a person before this command runs."
    return "Codex's safety heuristics do not know this command to be safe, so a person decides."


def _words(segment: str) -> list[str]:
    try:
        return shlex.split(segment)
    except ValueError:
        return segment.split()


def _outside(path: str, cwd: str) -> bool:
    if not cwd or not os.path.isabs(path):
        return False
    root = os.path.normpath(cwd)
    return os.path.commonpath([root, os.path.normpath(path)]) != root


def risk_markers(view: PendingView) -> tuple[str, ...]:
    """Short labels of what deserves a second look (empty: nothing stood out)."""
    marks: dict[str, None] = {}
    if view.hidden_characters:
        marks["hidden characters"] = None
    if view.env_overrides:
        # PATH, LD_PRELOAD … set by the turn: the words below may name another program.
        marks["env overrides change what runs"] = None
    if any(rule.endswith("-> forbidden") for rule in view.matched_rules):
        marks["a forbidden rule matched"] = None
    if view.kind == "sandbox_retry":
        marks["runs unsandboxed"] = None
    for segment in view.segments:
        words = _words(segment)
        first = os.path.basename(words[0]) if words else ""
        if first in _ESCALATION:
            marks["privilege escalation"] = None
        # What a wrapper (sudo, env, timeout …) runs is judged as the command.
        rest = words[1:]
        while first in _ESCALATION | _WRAPPERS and rest:
            word = rest.pop(0)
            if not word.startswith("-") and "=" not in word and not word.isdigit():
                first = os.path.basename(word)
        if first in _NETWORK or any("://" in w for w in words):
            marks["network"] = None
        if first in _DESTRUCTIVE or words[:3] in (
            ["git", "push", "--force"],
            ["git", "reset", "--hard"],
        ):
            marks["destructive"] = None
        if any(_outside(w, view.cwd) for w in words[1:]):
            marks["touches paths outside the workspace"] = None
    if view.patch_files:
        marks["writes files"] = None
    for line in view.patch_files:
        paths = line.split(" ", 1)[-1].split(" -> ")
        if any(_outside(p, view.cwd) for p in paths):
            marks["writes outside the workspace"] = None
        if line.startswith("delete "):
            marks["deletes files"] = None
    return tuple(marks)
