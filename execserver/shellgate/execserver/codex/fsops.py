"""The `fs/*` methods Codex 0.169.0 calls, over the daemon's file operations.

Blocking helpers (run in a thread by the session); results are the protocol's JSON shapes.
Reads and metadata are never confined (as ReadFile/Stat: Codex's sandboxes read everything).
A request carrying a `sandbox` has its mutations confined as the bubblewrap sandbox confines
a process: beneath the writable roots (`files` + `confined_fs`, no symlink leads out) and
never into a protected name (`.git`, `.codex`, ...) under one; a read-only sandbox writes
nothing. What cannot be confined that way (a recursive copy) is refused.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from shellgate.common.errors import (
    FileOperationError,
    LimitExceededError,
    PathNotAllowedError,
    SandboxUnavailableError,
    ServiceError,
)
from shellgate.common.sandbox import PROTECTED_NAMES
from shellgate.execserver import files
from shellgate.execserver.codex.sandbox_policy import sandbox_spec
from shellgate.execserver.codex.wire import (
    Message,
    b64decode,
    b64encode,
    field,
    path_from_uri,
    uri_from_path,
)
from shellgate.execserver.confine import Confinement


def _os(exc: OSError) -> ServiceError:
    return files.domain_error(exc)


@dataclass(frozen=True)
class FsSandbox:
    """Where a sandboxed fs/* mutation may write: the roots, minus their protected names."""

    confine: Confinement

    @classmethod
    def of(cls, params: Message, daemon_env: Mapping[str, str]) -> FsSandbox | None:
        """None without a `sandbox`; a refusal for one the daemon cannot enforce."""
        confine = Confinement.from_spec(sandbox_spec(params.get("sandbox"), daemon_env))
        return None if confine is None else cls(confine)

    def check(self, path: str, field_name: str = "path") -> Confinement:
        """The confinement for a mutation of path; refused inside a protected name."""
        _root, rel = self.confine.locate(path, field_name, follow_final=False)
        if rel.split("/", 1)[0] in PROTECTED_NAMES:
            # The sandbox keeps these read-only under every writable root (a process
            # could not write there either).
            raise PathNotAllowedError(f"{field_name} is inside the read-only {rel.split('/')[0]}")
        return self.confine


def get_metadata(params: Message, sandbox: FsSandbox | None = None) -> Message:
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


def read_file(params: Message, max_bytes: int, sandbox: FsSandbox | None = None) -> Message:
    """`fs/readFile` → {dataBase64}."""
    return {"dataBase64": b64encode(files.read_file(path_from_uri(params.get("path")), max_bytes))}


def write_file(params: Message, max_bytes: int, sandbox: FsSandbox | None = None) -> Message:
    """`fs/writeFile {path, dataBase64}` (atomic, like WriteFile)."""
    path = path_from_uri(params.get("path"))
    data = b64decode(params.get("dataBase64"), "dataBase64")
    if len(data) > max_bytes:
        raise LimitExceededError(f"data is larger than {max_bytes} bytes", limit="max_file_bytes")
    files.write_file(path, data, None, False, sandbox.check(path) if sandbox else None)
    return {}


def create_directory(params: Message, sandbox: FsSandbox | None = None) -> Message:
    """`fs/createDirectory {path, recursive}`."""
    recursive = field(params, "recursive", bool, required=False)
    path = path_from_uri(params.get("path"))
    files.make_directory(path, recursive is not False, sandbox.check(path) if sandbox else None)
    return {}


def remove(params: Message, sandbox: FsSandbox | None = None) -> Message:
    """`fs/remove {path, recursive, force}`."""
    recursive = field(params, "recursive", bool, required=False)
    force = field(params, "force", bool, required=False)
    path = path_from_uri(params.get("path"))
    confine = sandbox.check(path) if sandbox else None
    files.remove(path, recursive is not False, force is not False, confine)
    return {}


def copy(params: Message, max_bytes: int, sandbox: FsSandbox | None = None) -> Message:
    """`fs/copy {sourcePath, destinationPath, recursive}`."""
    source = path_from_uri(params.get("sourcePath"), "sourcePath")
    target = path_from_uri(params.get("destinationPath"), "destinationPath")
    recursive = field(params, "recursive", bool, required=False)
    if sandbox is not None:
        _copy_confined(source, target, max_bytes, sandbox)
        return {}
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


def _copy_confined(source: str, target: str, max_bytes: int, sandbox: FsSandbox) -> None:
    # A file is read (reads are never confined) and written through the confined write; a
    # tree would need every entry created beneath the root's fd, which files.py lacks.
    confine = sandbox.check(target, "destinationPath")
    if os.path.isdir(source):
        raise SandboxUnavailableError(
            "shellgate-execserver does not copy directories under a Codex sandbox; "
            "refused, nothing was copied"
        )
    try:
        mode = os.stat(source).st_mode & 0o7777
    except OSError as exc:
        raise _os(exc) from exc
    data = files.read_file(source, max_bytes)
    files.write_file(target, data, mode, False, confine)


def canonicalize(params: Message, sandbox: FsSandbox | None = None) -> Message:
    """`fs/canonicalize` → {path} (symlinks resolved; a missing path is an error)."""
    path = path_from_uri(params.get("path"))
    try:
        real = os.path.realpath(path, strict=True)
    except OSError as exc:
        raise _os(exc) from exc
    return {"path": uri_from_path(real)}


def read_directory(params: Message, sandbox: FsSandbox | None = None) -> Message:
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
