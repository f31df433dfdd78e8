"""confined_fs on a real filesystem, through openat2 and through the user-space walk."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from shellgate.common import confined_fs
from shellgate.common.confined_fs import ConfinedRoot, PathEscapeError, current_umask
from shellgate.common.errors import PathNotAllowedError
from shellgate.execserver.confine import Confinement

SECRET = b"outside, keep"


@pytest.fixture(params=["openat2", "walk"])
def root(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ConfinedRoot]:
    """tmp/root (with a/ and b/) opened both ways; tmp/outside/secret beside it."""
    kernel = request.param == "openat2"
    if kernel and not confined_fs.kernel_resolves_beneath():
        pytest.skip("this kernel has no openat2")
    (tmp_path / "root" / "a").mkdir(parents=True)
    (tmp_path / "root" / "b").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret").write_bytes(SECRET)
    fds_before = set(os.listdir("/proc/self/fd"))
    with ConfinedRoot(str(tmp_path / "root"), use_openat2=kernel) as opened:
        yield opened
    # Every fd a walk or an operation opened is closed again, failures included.
    assert set(os.listdir("/proc/self/fd")) == fds_before


def top(root: ConfinedRoot) -> Path:
    """The root folder as a Path."""
    return Path(root.path)


def outside_untouched(root: ConfinedRoot) -> None:
    """outside/ holds exactly its secret, unchanged."""
    outside = top(root).parent / "outside"
    assert os.listdir(outside) == ["secret"]
    assert (outside / "secret").read_bytes() == SECRET


def test_a_relative_symlink_inside_the_root_is_followed(root: ConfinedRoot) -> None:
    (top(root) / "a" / "to_b").symlink_to("../b")
    root.write_file("a/to_b/f", b"x")
    assert (top(root) / "b" / "f").read_bytes() == b"x"
    root.make_dir("a/to_b/c/d", parents=True)
    assert (top(root) / "b" / "c" / "d").is_dir()


@pytest.mark.parametrize("link", ["../../outside", "../../outside/"])
def test_a_symlink_in_the_middle_that_leads_out_is_refused(root: ConfinedRoot, link: str) -> None:
    (top(root) / "a" / "out").symlink_to(link)
    with pytest.raises(PathEscapeError) as err:
        root.write_file("a/out/secret", b"x")
    assert err.value.errno == errno.EXDEV
    for act in (
        lambda: root.remove("a/out/secret"),
        lambda: root.make_dir("a/out/new", parents=True),
        lambda: root.make_dir("a/out/new"),
        lambda: root.rename("b", root, "a/out/b"),
        lambda: root.write_file("a/out/new/f", b"x"),
    ):
        with pytest.raises(PathEscapeError):
            act()
    outside_untouched(root)


def test_an_absolute_symlink_is_refused_even_when_it_points_inside(root: ConfinedRoot) -> None:
    (top(root) / "abs_in").symlink_to(top(root) / "b")
    (top(root) / "abs_out").symlink_to(top(root).parent / "outside")
    for rel in ("abs_in/f", "abs_out/secret"):
        with pytest.raises(PathEscapeError):
            root.write_file(rel, b"x")
    assert os.listdir(top(root) / "b") == []
    outside_untouched(root)


@pytest.mark.parametrize("rel", ["../outside/secret", "a/../../outside/secret", "/etc/passwd"])
def test_dotdot_above_the_root_and_absolute_paths_are_refused(
    root: ConfinedRoot, rel: str
) -> None:
    with pytest.raises(PathEscapeError):
        root.remove(rel)
    outside_untouched(root)


def test_dotdot_that_stays_beneath_the_root_is_fine(root: ConfinedRoot) -> None:
    root.write_file("a/../b/f", b"x")
    assert (top(root) / "b" / "f").read_bytes() == b"x"
    (top(root) / "a" / "up").symlink_to("..")  # a link to the root itself, still beneath
    root.write_file("a/up/b/g", b"y")
    assert (top(root) / "b" / "g").read_bytes() == b"y"


def test_a_final_symlink_is_acted_on_itself(root: ConfinedRoot) -> None:
    secret = top(root).parent / "outside" / "secret"
    link = top(root) / "link"
    link.symlink_to(secret)
    root.rename("link", root, "b/moved")  # moves the link, not the file
    assert os.readlink(top(root) / "b" / "moved") == str(secret)
    root.remove("b/moved")  # removes the link, not the file
    assert not os.path.lexists(top(root) / "b" / "moved")
    link.symlink_to(secret)
    root.write_file("link", b"mine")  # replaces the link with a file
    assert not link.is_symlink() and link.read_bytes() == b"mine"
    link.unlink()
    link.symlink_to(top(root).parent / "outside")
    with pytest.raises(FileExistsError):
        root.make_dir("link")  # mkdir never follows the final component
    with pytest.raises(PathEscapeError):
        root.make_dir("link", parents=True)  # an existing entry is only fine as a folder
    outside_untouched(root)


def test_missing_parents(root: ConfinedRoot) -> None:
    with pytest.raises(FileNotFoundError):
        root.write_file("x/y/f", b"x")
    with pytest.raises(FileNotFoundError):
        root.make_dir("x/y")
    with pytest.raises(FileNotFoundError):
        root.remove("x/y")
    root.make_dir("x/y", parents=True)
    root.make_dir("x/y", parents=True)  # exists: fine, like mkdir -p
    root.write_file("x/y/f", b"x")
    with pytest.raises(FileExistsError):
        root.make_dir("x/y/f/z", parents=True)  # a file in the way, like os.makedirs
    (top(root) / "dangling").symlink_to("nowhere")
    with pytest.raises(FileExistsError):
        root.make_dir("dangling", parents=True)
    assert (top(root) / "x" / "y" / "f").read_bytes() == b"x"


def test_recursive_removal_never_follows_a_link_inside_the_tree(root: ConfinedRoot) -> None:
    tree = top(root) / "a" / "t" / "u"
    tree.mkdir(parents=True)
    (tree / "f").write_bytes(b"x")
    (tree / "out").symlink_to(top(root).parent / "outside")
    (tree / "abs").symlink_to(top(root).parent / "outside" / "secret")
    with pytest.raises(OSError) as err:
        root.remove("a/t")  # not empty, not recursive
    assert err.value.errno == errno.ENOTEMPTY
    root.remove("a/t", recursive=True)
    assert os.listdir(top(root) / "a") == []
    outside_untouched(root)


def test_removal_depth_is_bounded(root: ConfinedRoot, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(confined_fs, "MAX_REMOVE_DEPTH", 3)
    (top(root) / "a" / "1" / "2" / "3" / "4").mkdir(parents=True)
    with pytest.raises(OSError) as err:
        root.remove("a/1", recursive=True)
    assert err.value.errno == errno.ENAMETOOLONG
    root.remove("a/1/2/3", recursive=True)
    assert os.listdir(top(root) / "a" / "1" / "2") == []


def test_the_root_itself_is_not_an_entry_beneath_it(root: ConfinedRoot) -> None:
    for act in (lambda: root.remove(""), lambda: root.write_file(".", b"x")):
        with pytest.raises(PathEscapeError):
            act()
    root.make_dir("", parents=True)
    with pytest.raises(FileExistsError):
        root.make_dir("")
    with pytest.raises(OSError) as err:
        root.remove("a/..")
    assert err.value.errno == errno.EINVAL
    assert sorted(os.listdir(top(root))) == ["a", "b"]


def test_symlink_loops_end_in_eloop(root: ConfinedRoot) -> None:
    (top(root) / "p").symlink_to("q")
    (top(root) / "q").symlink_to("p")
    with pytest.raises(OSError) as err:
        root.write_file("p/f", b"x")
    assert err.value.errno == errno.ELOOP


def test_modes_and_temp_files(root: ConfinedRoot) -> None:
    root.write_file("a/new", b"x")
    assert (top(root) / "a" / "new").stat().st_mode & 0o777 == 0o666 & ~current_umask()
    os.chmod(top(root) / "a" / "new", 0o640)
    root.write_file("a/new", b"y")  # keeps the file's mode
    assert (top(root) / "a" / "new").stat().st_mode & 0o777 == 0o640
    root.write_file("a/new", b"z", 0o600)
    assert (top(root) / "a" / "new").stat().st_mode & 0o777 == 0o600
    assert os.listdir(top(root) / "a") == ["new"]  # no temp file left


def test_a_root_whose_path_holds_a_symlink_is_refused(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "via").symlink_to(tmp_path / "real")
    for kernel in (False, confined_fs.kernel_resolves_beneath()):
        with pytest.raises(PathEscapeError):
            ConfinedRoot(str(tmp_path / "via"), use_openat2=kernel)
        with pytest.raises(FileNotFoundError):
            ConfinedRoot(str(tmp_path / "missing"), use_openat2=kernel)
        ConfinedRoot(str(tmp_path / "real"), use_openat2=kernel).close()


def test_current_umask_reads_the_process_umask() -> None:
    previous = os.umask(0o027)
    try:
        assert current_umask() == 0o027
    finally:
        os.umask(previous)


def test_confinement_locates_the_innermost_root_strictly_holding_the_entry(
    tmp_path: Path,
) -> None:
    outer, inner = str(tmp_path), str(tmp_path / "ws")
    (tmp_path / "ws" / "sub").mkdir(parents=True)
    (tmp_path / "ws" / "up").symlink_to(tmp_path)
    confine = Confinement((outer, inner))
    assert confine.locate(f"{inner}/sub/f", "path", follow_final=False) == (inner, "sub/f")
    assert confine.locate(inner, "path", follow_final=False) == (outer, "ws")
    assert confine.locate(f"{inner}/up", "path", follow_final=False) == (inner, "up")
    assert confine.locate(f"{inner}/up", "path", follow_final=True) == (outer, "")
    with pytest.raises(PathNotAllowedError):
        confine.locate("/etc/passwd", "path", follow_final=False)
    with pytest.raises(PathNotAllowedError):
        Confinement(()).locate(f"{inner}/sub", "path", follow_final=True)
