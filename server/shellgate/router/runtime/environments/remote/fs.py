"""The apply_patch filesystem seam over an exec-server's file RPCs (blocking; worker threads)."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

import grpc
import grpc.aio
from shellgate.common.grpc.status import error_from_status
from shellgate.common.process.cwd_pin import CWD_CHANGED, MISSING_CWD, CwdIdentity
from shellgate.router.apply_patch.fs import (
    INVALID_UTF8,
    FileStat,
    PatchIoError,
    StagedWrite,
)
from shellgate.router.runtime.environments.spawn import EnvironmentUnavailableError, SpawnFailure
from shellgate.v1 import exec_pb2, shell_pb2

if TYPE_CHECKING:
    from shellgate.router.runtime.environments.remote.environment import RemoteEnvironment

__all__ = ["RemoteFileSystem", "approved_cwd_pb", "identify_remote_cwd"]


def _io_error(exc: grpc.aio.AioRpcError) -> PatchIoError:
    # The daemon's text is already `{strerror} (os error {errno})`; the errno comes from the
    # status's ErrorInfo, not from that text.
    error = error_from_status(exc)
    return PatchIoError(exc.details() or exc.code().name, error.errno if error else None)


async def identify_remote_cwd(env: RemoteEnvironment, path: str) -> CwdIdentity | None:
    """What `path` names on the daemon's host (Stat, symlinks followed), for cwd pinning.

    MISSING_CWD when nothing is there or it cannot be looked at (the start then fails);
    None when the daemon reports no identity (older, or an SSH backend: its inodes are on
    another host); EnvironmentUnavailableError when the daemon cannot be asked.
    """
    try:
        reply = await env.call("Stat", exec_pb2.StatRequest(path=path, follow_symlinks=True))
    except grpc.aio.AioRpcError as exc:
        if exc.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            raise EnvironmentUnavailableError(
                env.environment_id, f"Stat: {exc.details() or exc.code().name}"
            ) from exc
        return MISSING_CWD
    if not reply.exists:
        return MISSING_CWD
    if not reply.HasField("identity"):
        return None
    return (reply.identity.device, reply.identity.inode)


def approved_cwd_pb(cwd: str, identity: CwdIdentity) -> exec_pb2.CwdIdentity:
    """The Start order's `approved_cwd`; a cwd that did not exist at approval never matches."""
    if identity == MISSING_CWD:
        # uint64 cannot carry MISSING_CWD; refusing here is what the daemon would do.
        raise SpawnFailure(CWD_CHANGED.format(cwd=repr(cwd)))
    return exec_pb2.CwdIdentity(device=identity[0], inode=identity[1])


class RemoteFileSystem:
    """PatchFileSystem whose calls block the calling (non-loop) thread on the daemon's RPCs."""

    def __init__(
        self,
        env: RemoteEnvironment,
        loop: asyncio.AbstractEventLoop,
        roots: tuple[str, ...] | None = None,
    ) -> None:
        self._env = env
        self._loop = loop
        # Confined view: mutating RPCs carry the writable roots, and the daemon performs them
        # beneath those roots' directory fds (it refuses what would land outside).
        self._sandbox = (
            shell_pb2.SandboxRequest(
                mode=shell_pb2.SANDBOX_MODE_WORKSPACE_WRITE, writable_roots=list(roots)
            )
            if roots is not None
            else None
        )

    def resolve(self, path: str) -> str:
        """The path itself: the daemon's symlinks are not visible from here (the confined
        view is what keeps writes inside the roots)."""
        return path

    def confined(self, roots: tuple[str, ...]) -> RemoteFileSystem:
        """A view whose writes the daemon confines to `roots`."""
        return RemoteFileSystem(self._env, self._loop, roots)

    def _confine(self, request: Any) -> Any:
        if self._sandbox is not None:
            request.sandbox.CopyFrom(self._sandbox)
        return request

    def _run(self, method: str, request: Any) -> Any:
        async def call() -> Any:
            try:
                return await self._env.call(method, request)
            except grpc.aio.AioRpcError as exc:
                raise _io_error(exc) from exc

        coro: Coroutine[Any, Any, Any] = call()
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return future.result()

    def read_text(self, path: str) -> str:
        """The file's contents as UTF-8 text."""
        data: bytes = self._run("ReadFile", exec_pb2.ReadFileRequest(path=path)).data
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise PatchIoError(INVALID_UTF8) from exc

    def stat(self, path: str) -> FileStat | None:
        """File or directory info following symlinks; None when nothing is there."""
        reply = self._run("Stat", exec_pb2.StatRequest(path=path, follow_symlinks=True))
        if not reply.exists:
            return None
        return FileStat(
            is_file=reply.kind == exec_pb2.FILE_KIND_FILE,
            is_dir=reply.kind == exec_pb2.FILE_KIND_DIRECTORY,
        )

    def make_dirs(self, path: str) -> None:
        """mkdir -p."""
        self._run(
            "MakeDirectory", self._confine(exec_pb2.MakeDirectoryRequest(path=path, parents=True))
        )

    def stage_write(self, path: str, content: str) -> StagedWrite:
        """Write a temp file beside `path` (keeping an existing file's mode)."""
        folder, name = os.path.split(path)
        temp = os.path.join(folder, f".{name}.{uuid.uuid4().hex}.tmp")
        existing = self._run("Stat", exec_pb2.StatRequest(path=path, follow_symlinks=True))
        request = exec_pb2.WriteFileRequest(path=temp, data=content.encode("utf-8"))
        if existing.exists:
            request.mode = existing.mode
        self._run("WriteFile", self._confine(request))
        return StagedWrite(temp, path)

    def rename(self, src: str, dst: str) -> None:
        """Atomic move on the daemon's host."""
        self._run("Rename", self._confine(exec_pb2.RenameRequest(from_path=src, to_path=dst)))

    def remove(self, path: str) -> None:
        """Remove a file."""
        self._run("Remove", self._confine(exec_pb2.RemoveRequest(path=path)))

    def remove_dir(self, path: str) -> None:
        """Remove an empty directory."""
        self._run("Remove", self._confine(exec_pb2.RemoveRequest(path=path)))
