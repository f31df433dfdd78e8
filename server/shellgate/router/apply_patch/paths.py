"""Lexical path handling for patches: the path convention follows the cwd (POSIX or Windows)."""

from __future__ import annotations

import ntpath
import posixpath
import re
from urllib.parse import unquote

_WINDOWS_ABS = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\)")
_FILE_URI = "file://"


def cwd_path(cwd: str) -> str:
    """A cwd as a plain path: `file:///repo` → `/repo`, `file:///C:/w` → `C:/w`."""
    if not cwd.startswith(_FILE_URI):
        return cwd
    rest = unquote(cwd[len(_FILE_URI) :])
    # `file:///C:/x` carries a Windows drive after the authority's slash.
    if re.match(r"^/[A-Za-z]:[\\/]", rest):
        return rest[1:]
    return rest


def is_windows_path(path: str) -> bool:
    """True for a drive or UNC path (`C:\\x`, `C:/x`, `\\\\host\\share`)."""
    return bool(_WINDOWS_ABS.match(path))


def file_stem(path: str, windows: bool) -> str:
    """The final component without its last extension (Rust `Path::file_stem`)."""
    name = ntpath.basename(path.rstrip("\\/")) if windows else posixpath.basename(path.rstrip("/"))
    if name in ("", ".", ".."):
        return ""
    dot = name.rfind(".")
    return name if dot <= 0 else name[:dot]


def resolve(base: str, path: str) -> str:
    """`path` made absolute against `base` and normalised lexically (no symlinks, no I/O)."""
    if is_windows_path(base):
        joined = path if ntpath.isabs(path) or is_windows_path(path) else ntpath.join(base, path)
        return ntpath.normpath(joined)
    joined = posixpath.join(base, path)
    normal = posixpath.normpath(joined)
    # POSIX keeps a leading `//`; Rust's lexical absolutize does not.
    return "/" + normal.lstrip("/") if normal.startswith("//") else normal


def parent(path: str) -> str:
    """The directory holding `path` (same convention)."""
    if is_windows_path(path):
        return ntpath.dirname(path)
    return posixpath.dirname(path)


def is_within(path: str, root: str) -> bool:
    """True when the normalised `path` is `root` or below it."""
    if is_windows_path(root):
        root_n, path_n, sep = ntpath.normpath(root), ntpath.normpath(path), "\\"
    else:
        root_n, path_n, sep = posixpath.normpath(root), posixpath.normpath(path), "/"
    if path_n == root_n:
        return True
    return path_n.startswith(root_n.rstrip(sep) + sep)
