"""Applying patches: result texts, all-or-nothing writes, local disk behaviour (spec 02 §6.4, §7)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from shellgate.router.apply_patch import (
    ApplyPatchAction,
    LocalFileSystem,
    MemoryFileSystem,
    PatchFileSystem,
    PatchOutcome,
    apply_patch_action,
    apply_patch_tool_spec,
    intercept_apply_patch,
    render_classic_block,
    run_apply_patch_tool,
)
from shellgate.router.apply_patch.fs import os_error


def _patch(*hunks: str) -> str:
    return "*** Begin Patch\n" + "\n".join(hunks) + "\n*** End Patch"


def _apply(patch: str, cwd: str, fs: PatchFileSystem) -> PatchOutcome:
    action = intercept_apply_patch(["apply_patch", patch], cwd, fs)
    assert isinstance(action, ApplyPatchAction), action
    return apply_patch_action(action, fs)


def test_summary_order_and_paths_as_written() -> None:
    fs = MemoryFileSystem(
        {"/repo/crlf.txt": "l1\r\nl2\r\n", "/repo/x.txt": "x\n", "/repo/m": "m\n"}
    )
    outcome = _apply(
        _patch(
            "*** Delete File: x.txt",
            "*** Update File: sub/../crlf.txt\n@@\n-l1\n+L1",
            "*** Add File: /srv/out/abs.txt\n+abs",
            "*** Update File: m\n*** Move to: moved/m2\n@@\n-m\n+M",
        ),
        "/repo",
        fs,
    )
    assert outcome == PatchOutcome(
        success=True,
        stdout=(
            "Success. Updated the following files:\nA /srv/out/abs.txt\n"
            "M sub/../crlf.txt\nM moved/m2\nD x.txt\n"
        ),
        stderr="",
    )
    assert fs.files == {
        "/repo/crlf.txt": "L1\r\nl2\r\n",
        "/srv/out/abs.txt": "abs\n",
        "/repo/moved/m2": "M\n",
    }


def test_add_overwrites_existing_file_and_reports_a() -> None:
    fs = MemoryFileSystem({"/repo/a": "old\n"})
    outcome = _apply(_patch("*** Add File: a\n+new"), "/repo", fs)
    assert outcome.stdout == "Success. Updated the following files:\nA a\n"
    assert fs.files == {"/repo/a": "new\n"}


def test_dotdot_escapes_cwd_lexically() -> None:
    # Spec: paths are resolved against the effective cwd as written; `..` may leave it (the
    # approval layer decides via written_paths()), and the summary echoes the path as written.
    fs = MemoryFileSystem({"/repo/sub/keep": "k\n"})
    action = intercept_apply_patch(
        ["apply_patch", _patch("*** Add File: ../../outside.txt\n+o")], "/repo/sub", fs
    )
    assert isinstance(action, ApplyPatchAction)
    assert action.written_paths() == ("/outside.txt",)
    outcome = apply_patch_action(action, fs)
    assert outcome.stdout == "Success. Updated the following files:\nA ../../outside.txt\n"
    assert fs.files["/outside.txt"] == "o\n"
    # `..` past the root stays at the root, as a lexical normalisation does.
    action = intercept_apply_patch(
        ["apply_patch", _patch("*** Add File: ../../../../etc/x\n+o")], "/repo/sub", fs
    )
    assert isinstance(action, ApplyPatchAction)
    assert action.written_paths() == ("/etc/x",)


def test_sequential_hunks_on_one_file() -> None:
    # Each hunk is verified against the original file, but applied on the previous result.
    fs = MemoryFileSystem({"/r/a": "1\n2\n3\n"})
    outcome = _apply(
        _patch("*** Update File: a\n@@\n-1\n+one", "*** Update File: a\n@@\n-2\n+two"), "/r", fs
    )
    assert outcome.stdout == "Success. Updated the following files:\nM a\nM a\n"
    assert fs.files == {"/r/a": "one\ntwo\n3\n"}


def test_third_hunk_verification_error_writes_nothing() -> None:
    files = {"/r/a": "a\n", "/r/b": "b\n", "/r/c": "c\n"}
    fs = MemoryFileSystem(files)
    result = run_apply_patch_tool(
        _patch(
            "*** Add File: new\n+n",
            "*** Update File: a\n@@\n-a\n+A",
            "*** Update File: b\n@@\n-missing\n+B",
            "*** Delete File: c",
        ),
        "/r",
        fs,
    )
    assert not result.success
    assert (
        result.text
        == "apply_patch verification failed: Failed to find expected lines in /r/b:\nmissing"
    )
    assert fs.files == files


def test_plan_error_after_earlier_hunks_writes_nothing() -> None:
    # Verification checks each hunk against the original files; the second update only fails
    # once the first one has been applied, which the plan finds before any write.
    files = {"/r/a": "x\n", "/r/b": "b\n"}
    fs = MemoryFileSystem(files)
    outcome = _apply(
        _patch(
            "*** Update File: b\n@@\n-b\n+B",
            "*** Update File: a\n@@\n-x\n+y",
            "*** Update File: a\n@@\n-x\n+z",
        ),
        "/r",
        fs,
    )
    assert outcome == PatchOutcome(False, "", "Failed to find expected lines in /r/a:\nx\n")
    assert fs.files == files


@pytest.mark.parametrize(
    ("fail", "message"),
    [
        ("write", "Failed to write file d2/new.txt"),
        ("rename", "Failed to write file d2/new.txt"),
        ("remove", "Failed to delete file gone"),
        ("remove_move", "Failed to remove original mv"),
    ],
)
def test_write_phase_failures_roll_back(fail: str, message: str) -> None:
    files = {"/r/a": "a\n", "/r/gone": "g\n", "/r/mv": "m\n", "/r/d2/keep": "k\n"}
    fs = MemoryFileSystem(files)
    if fail == "write":
        fs.fail_writes["/r/d2/new.txt"] = 28  # ENOSPC
    elif fail == "rename":
        fs.fail_renames["/r/d2/new.txt"] = 13
    elif fail == "remove":
        fs.fail_removes["/r/gone"] = 13
    else:
        fs.fail_removes["/r/mv"] = 13
    outcome = _apply(
        _patch(
            "*** Update File: a\n@@\n-a\n+A",
            "*** Add File: fresh/dir/f\n+f",
            "*** Update File: mv\n*** Move to: mv2\n@@\n-m\n+M",
            "*** Add File: d2/new.txt\n+n",
            "*** Delete File: gone",
        ),
        "/r",
        fs,
    )
    assert outcome == PatchOutcome(False, "", message + "\n")
    assert outcome.exit_code == 1
    assert fs.files == files
    assert "/r/fresh" not in fs.dirs


def test_classic_block_and_tool_texts() -> None:
    fs = MemoryFileSystem()
    result = run_apply_patch_tool(_patch("*** Add File: x.txt\n+x"), "/w", fs)
    assert result.success
    assert result.text == (
        "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nA x.txt\n"
    )
    empty = run_apply_patch_tool("*** Begin Patch\n*** End Patch", "/w", fs)
    assert (empty.text, empty.success) == ("patch rejected: empty patch", False)
    bad = run_apply_patch_tool("*** Begin Patch\n*** Frobnicate File: x\n*** End Patch", "/w", fs)
    assert bad.text.startswith(
        "apply_patch verification failed: invalid hunk at line 2, '*** Frobnicate File: x'"
    )
    heredoc = run_apply_patch_tool(
        "<<'EOF'\n*** Begin Patch\n*** Add File: y\n+y\n*** End Patch\nEOF\n", "/w", fs
    )
    assert heredoc.success
    failed = PatchOutcome(False, "", "Failed to write file x\n")
    assert render_classic_block(failed) == (
        "Exit code: 1\nWall time: 0 seconds\nOutput:\nFailed to write file x\n"
    )
    assert apply_patch_tool_spec()["name"] == "apply_patch"


# --- the local filesystem -------------------------------------------------------------------


def test_local_apply_preserves_mode_symlink_and_crlf(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_bytes(b"echo a\r\necho b\r\n")
    script.chmod(0o751)
    real = tmp_path / "real.txt"
    real.write_text("r\n")
    (tmp_path / "link.txt").symlink_to(real)
    fs = LocalFileSystem()
    outcome = _apply(
        _patch(
            "*** Update File: run.sh\n@@\n-echo a\n+echo A",
            "*** Update File: link.txt\n@@\n-r\n+R",
            "*** Add File: deep/er/new.txt\n+hello",
        ),
        str(tmp_path),
        fs,
    )
    assert outcome.success, outcome
    assert script.read_bytes() == b"echo A\r\necho b\r\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o751
    assert (tmp_path / "link.txt").is_symlink()
    assert real.read_text() == "R\n"
    assert (tmp_path / "deep/er/new.txt").read_text() == "hello\n"
    assert not [p for p in tmp_path.rglob("*.apply_patch")]


def test_local_read_errors(tmp_path: Path) -> None:
    (tmp_path / "bin").write_bytes(b"\xff\xfe")
    fs = LocalFileSystem()
    result = intercept_apply_patch(
        ["apply_patch", _patch("*** Delete File: bin")], str(tmp_path), fs
    )
    assert getattr(result, "error", None) == (
        f"Failed to read {tmp_path}/bin: stream did not contain valid UTF-8"
    )
    result = intercept_apply_patch(
        ["apply_patch", _patch("*** Delete File: nope")], str(tmp_path), fs
    )
    assert getattr(result, "error", None) == (
        f"Failed to read {tmp_path}/nope: No such file or directory (os error 2)"
    )


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_local_unmakeable_directory_leaves_everything(tmp_path: Path) -> None:
    # A regular file where a directory must be created: fails even for root.
    (tmp_path / "a.txt").write_text("a\n")
    (tmp_path / "b.txt").write_text("b\n")
    (tmp_path / "blocker").write_text("not a dir\n")
    before = _snapshot(tmp_path)
    outcome = _apply(
        _patch(
            "*** Update File: a.txt\n@@\n-a\n+A",
            "*** Delete File: b.txt",
            "*** Add File: ok/new.txt\n+n",
            "*** Add File: blocker/x.txt\n+x",
        ),
        str(tmp_path),
        LocalFileSystem(),
    )
    assert outcome == PatchOutcome(
        False, "", "Failed to create parent directories for blocker/x.txt\n"
    )
    assert _snapshot(tmp_path) == before
    assert not (tmp_path / "ok").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_local_unwritable_directory_leaves_everything(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "c.txt").write_text("c\n")
    before = _snapshot(tmp_path)
    locked.chmod(0o500)
    try:
        outcome = _apply(
            _patch(
                "*** Update File: a.txt\n@@\n-a\n+A", "*** Update File: locked/c.txt\n@@\n-c\n+C"
            ),
            str(tmp_path),
            LocalFileSystem(),
        )
    finally:
        locked.chmod(0o700)
    assert outcome == PatchOutcome(False, "", "Failed to write file locked/c.txt\n")
    assert _snapshot(tmp_path) == before


def test_local_commit_failure_rolls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The second rename fails (as ENOSPC/EACCES could): the first file is restored.
    (tmp_path / "a.txt").write_text("a\n")
    (tmp_path / "b.txt").write_text("b\n")
    before = _snapshot(tmp_path)
    fs = LocalFileSystem()
    real_rename = fs.rename
    calls = {"n": 0}

    def flaky(src: str, dst: str) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise os_error(28)
        real_rename(src, dst)

    monkeypatch.setattr(fs, "rename", flaky)
    outcome = _apply(
        _patch("*** Update File: a.txt\n@@\n-a\n+A", "*** Update File: b.txt\n@@\n-b\n+B"),
        str(tmp_path),
        fs,
    )
    assert outcome == PatchOutcome(False, "", "Failed to write file b.txt\n")
    assert _snapshot(tmp_path) == before
