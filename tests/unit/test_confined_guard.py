"""Confined operations keep a root's protected names read-only, as the sandbox does.

By name (a `.git` that does not exist yet too), through a symlink into one, and through a
`.git` pointer file's gitdir; refusals are EROFS, what a sandboxed command meets.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from shellgate.common import confined_fs
from shellgate.common.confined_fs import ConfinedRoot, ProtectedPathError


@pytest.fixture(params=["openat2", "walk"])
def kernel(request: pytest.FixtureRequest) -> bool:
    """Both resolution paths of ConfinedRoot."""
    if request.param == "openat2" and not confined_fs.kernel_resolves_beneath():
        pytest.skip("this kernel has no openat2")
    return bool(request.param == "openat2")


def _repo(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n")
    (root / "src").mkdir()
    return root


def _refused(action: Callable[..., object], *args: object, **kwargs: object) -> None:
    with pytest.raises(ProtectedPathError) as caught:
        action(*args, **kwargs)
    assert caught.value.errno == errno.EROFS


def test_protected_names_stay_read_only(tmp_path: Path, kernel: bool) -> None:
    root = _repo(tmp_path)
    (root / "hooks").symlink_to(".git/hooks")  # a way in by another name
    (root / "gitlink").symlink_to(".git")
    with ConfinedRoot(str(root), use_openat2=kernel) as opened:
        _refused(opened.write_file, ".git/hooks/pre-commit", b"evil")
        _refused(opened.write_file, "hooks/pre-commit", b"evil")
        _refused(opened.write_file, "gitlink/config", b"evil")
        _refused(opened.remove, ".git/config")
        _refused(opened.remove, ".git", recursive=True)
        _refused(opened.make_dir, ".codex/x", parents=True)  # absent names too
        _refused(opened.write_file, ".git2/../.git/config", b"evil")
        with ConfinedRoot(str(root), use_openat2=kernel) as same:
            _refused(opened.rename, "src", same, ".git/src")
            _refused(same.rename, ".git/config", opened, "config")
        # Everything else under the root is as writable as before.
        opened.write_file("src/a.py", b"ok")
        opened.write_file(".github", b"ok")
        opened.remove("hooks")  # the link itself, not what it points to
    assert not (root / ".git" / "hooks" / "pre-commit").exists()
    assert (root / ".git" / "config").read_text() == "[core]\n"
    assert (root / "src" / "a.py").read_bytes() == b"ok"


def test_a_git_pointer_protects_its_gitdir_and_a_tree_holding_it(
    tmp_path: Path, kernel: bool
) -> None:
    root = tmp_path / "ws"
    gitdir = root / "vendor" / "repo.git"
    gitdir.mkdir(parents=True)
    (gitdir / "HEAD").write_text("ref\n")
    (root / ".git").write_text("gitdir: vendor/repo.git\n")
    with ConfinedRoot(str(root), use_openat2=kernel) as opened:
        _refused(opened.write_file, "vendor/repo.git/HEAD", b"evil")
        _refused(opened.remove, "vendor", recursive=True)  # would empty the gitdir
        _refused(opened.write_file, ".git", b"gitdir: /tmp/evil\n")
    assert (gitdir / "HEAD").read_text() == "ref\n"


def test_unprotected_roots_behave_as_before(tmp_path: Path, kernel: bool) -> None:
    root = _repo(tmp_path)
    with ConfinedRoot(str(root), use_openat2=kernel, protect=False) as opened:
        opened.write_file(".git/hooks/pre-commit", b"x")
    assert (root / ".git" / "hooks" / "pre-commit").read_bytes() == b"x"
    fds = set(os.listdir("/proc/self/fd"))
    with ConfinedRoot(str(root), use_openat2=kernel) as opened:
        _refused(opened.write_file, ".git/x", b"x")
    assert set(os.listdir("/proc/self/fd")) == fds
