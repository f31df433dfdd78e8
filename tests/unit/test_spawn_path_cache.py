"""The spawn fast path's cached PATH lookup keeps its answers (no process is started; the
spawns themselves: tests/integration/test_execserver_spawn.py)."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest
from shellgate.common.errors import SpawnError
from shellgate.common.process.base import SpawnRequest
from shellgate.common.process.launch import check_spawnable


def _request(program: str, path: str, cwd: str = "/") -> SpawnRequest:
    return SpawnRequest((program,), cwd, {"PATH": path})


def _errno(request: SpawnRequest) -> int:
    with pytest.raises(SpawnError) as err:
        check_spawnable(request)
    return err.value.errno


def test_a_cached_path_hit_is_checked_again_on_every_use(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    path = f"{first}:{second}"
    tool = second / "sg-tool"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    check_spawnable(_request("sg-tool", path))  # found (and remembered) in the second entry
    check_spawnable(_request("sg-tool", path))
    tool.chmod(0o644)
    assert _errno(_request("sg-tool", path)) == errno.EACCES
    tool.unlink()
    assert _errno(_request("sg-tool", path)) == errno.ENOENT
    # Appearing in an earlier entry later is found too.
    (first / "sg-tool").write_text("#!/bin/sh\n")
    (first / "sg-tool").chmod(0o755)
    check_spawnable(_request("sg-tool", path))
    # A different PATH or cwd is a different lookup, not the cached one.
    assert _errno(_request("sg-tool", str(second))) == errno.ENOENT
    assert _errno(_request("./sg-tool", path, cwd=str(second))) == errno.ENOENT
    check_spawnable(_request("./sg-tool", path, cwd=str(first)))
