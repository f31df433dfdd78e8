"""The `fs/*` methods Codex 0.169.0 calls, over the daemon's file operations.

Blocking helpers (run in a thread by the session); results are the protocol's JSON shapes.
Reads and metadata are never confined (as ReadFile/Stat); no request may carry a `sandbox`
(the daemon reports no sandbox capability and refuses rather than ignores one).
"""

from __future__ import annotations

import os
import shutil
from typing import Any

from shellgate.common.errors import FileOperationError, LimitExceededError, ServiceError
from shellgate.execserver import files
from shellgate.execserver.codex.wire import (
    Message,
    b64decode,
    b64encode,
    field,
    path_from_uri,
    uri_from_path,
)


def _os(exc: OSError) -> ServiceError:
    return files.domain_error(exc)


def get_metadata(params: Message) -> Message:
    """`fs/getMetadata` → {isDirectory, isFile, isSymlink, size, createdAtMs, modifiedAtMs}."""
    path = path_from_uri(params.get("path"))
    try:
        st = os.stat(path)
        link = os.path.islink(path)
    except OSError as exc:
        raise _os(exc) from exc
    created = getattr(st, "st_birthtime", 0)
    return {
        "isDirectory": os.path.isdir(path),
        "isFile": os.path.isfile(path),
        "isSymlink": link,
        "size": st.st_size,
        "createdAtMs": int(created * 1000),
        "modifiedAtMs": st.st_mtime_ns // 1_000_000,
    }


def read_file(params: Message, max_bytes: int) -> Message:
    """`fs/readFile` → {dataBase64}."""
    return {"dataBase64": b64encode(files.read_file(path_from_uri(params.get("path")), max_bytes))}


def write_file(params: Message, max_bytes: int) -> Message:
    """`fs/writeFile {path, dataBase64}` (atomic, like WriteFile)."""
    path = path_from_uri(params.get("path"))
    data = b64decode(params.get("dataBase64"), "dataBase64")
    if len(data) > max_bytes:
        raise LimitExceededError(f"data is larger than {max_bytes} bytes", limit="max_file_bytes")
    files.write_file(path, data, None, False, None)
    return {}


def create_directory(params: Message) -> Message:
    """`fs/createDirectory {path, recursive}`."""
    recursive = field(params, "recursive", bool, required=False)
    files.make_directory(path_from_uri(params.get("path")), recursive is not False, None)
    return {}


def remove(params: Message) -> Message:
    """`fs/remove {path, recursive, force}`."""
    recursive = field(params, "recursive", bool, required=False)
    force = field(params, "force", bool, required=False)
    files.remove(path_from_uri(params.get("path")), recursive is not False, force is not False, None)
    return {}


def copy(params: Message) -> Message:
    """`fs/copy {sourcePath, destinationPath, recursive}`."""
    source = path_from_uri(params.get("sourcePath"), "sourcePath")
    target = path_from_uri(params.get("destinationPath"), "destinationPath")
    recursive = field(params, "recursive", bool, required=False)
    try:
        if os.path.isdir(source):
            if not recursive:
                raise FileOperationError("fs/copy requires recursive: true when sourcePath is a directory")
            shutil.copytree(source, target, symlinks=True)
        else:
            shutil.copy2(source, target, follow_symlinks=False)
    except OSError as exc:
        raise _os(exc) from exc
    return {}


def canonicalize(params: Message) -> Message:
    """`fs/canonicalize` → {path} (symlinks resolved; a missing path is an error)."""
    path = path_from_uri(params.get("path"))
    try:
        real = os.path.realpath(path, strict=True)
    except OSError as exc:
        raise _os(exc) from exc
    return {"path": uri_from_path(real)}


def read_directory(params: Message) -> Message:
    """`fs/readDirectory` → {entries: [{fileName, isDirectory, isFile}]} sorted by name."""
    path = path_from_uri(params.get("path"))
    entries: list[dict[str, Any]] = []
    try:
        with os.scandir(path) as listing:
            for entry in listing:
                entries.append({"fileName": entry.name, "isDirectory": entry.is_dir(),
                                "isFile": entry.is_file()})  # fmt: skip
    except OSError as exc:
        raise _os(exc) from exc
    entries.sort(key=lambda e: str(e["fileName"]))
    return {"entries": entries}
