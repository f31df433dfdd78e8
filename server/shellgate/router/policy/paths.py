"""Lexical path helpers shared by matching, heuristics and unwrapping (no filesystem access)."""

from __future__ import annotations


def path_basename(value: str) -> str | None:
    """The last component like Rust `Path::file_name` (None for `..`, `/` or empty)."""
    if "/" not in value:
        # One component (the usual bare program name): itself, unless empty, `.` or `..`.
        return None if value in ("", ".", "..") else value
    parts = [p for p in value.split("/") if p not in ("", ".")]
    if not parts:
        return None
    last = parts[-1]
    if last == ".." or (value.endswith("/..")):
        return None
    return last


def command_basename(cmd0: str) -> str:
    """Basename of a program token for keyed heuristics (`/bin/rm` → `rm`)."""
    return path_basename(cmd0) or cmd0


def normalize_absolute(value: str) -> str:
    """Lexically normalise an absolute path (`//`, `.` and `..` resolved; no trailing `/`)."""
    stack: list[str] = []
    for part in value.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if stack:
                stack.pop()
            continue
        stack.append(part)
    return "/" + "/".join(stack)
