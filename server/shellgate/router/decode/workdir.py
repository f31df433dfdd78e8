"""Lexical cwd/`workdir` joins (spec 02 §2): no symlinks, no `~`, no existence checks."""

from __future__ import annotations

import re

_WINDOWS_ABS = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\)")


def is_windows_path(path: str) -> bool:
    """True for a drive-letter or UNC path."""
    return bool(_WINDOWS_ABS.match(path))


def _normalize(parts: list[str], root: str, sep: str) -> str:
    out: list[str] = []
    for part in parts:
        if part in ("", "."):
            continue
        if part == "..":
            if out:
                out.pop()
            continue  # `..` at the root stays at the root
        out.append(part)
    return root + sep.join(out)


def join_path(base: str, path: str) -> str:
    """`base` joined with `path`: an absolute `path` replaces the base; `.`/`..` resolved.

    The path convention is the base's (spec 02 §2: carried by the environment cwd), so on a
    POSIX base `C:\\x` is an ordinary relative name; on a Windows base a rooted path without
    a drive (`\\x`, `/x`) keeps the base's drive.
    """
    if is_windows_path(base):
        if is_windows_path(path):
            full = path
        elif path.startswith(("\\", "/")):
            full = base[:2] + path
        else:
            full = base.rstrip("\\/") + "\\" + path
        full = full.replace("/", "\\")
        root_len = 2 if full.startswith("\\\\") else 3
        root = full[:root_len]
        return _normalize(full[root_len:].split("\\"), root, "\\")
    full = path if path.startswith("/") else f"{base.rstrip('/')}/{path}"
    return _normalize(full.split("/"), "/", "/")


def resolve_workdir(base_cwd: str, workdir: str | None) -> str:
    """The command cwd: the base when `workdir` is absent or empty, else the join."""
    if not workdir:
        return base_cwd
    return join_path(base_cwd, workdir)
