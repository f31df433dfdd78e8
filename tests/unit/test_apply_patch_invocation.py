"""apply_patch recognition and verification through `intercept_apply_patch` (spec 02 §6)."""

from __future__ import annotations

import pytest
from shellgate.router.apply_patch import (
    AddChange,
    AddFile,
    ApplyPatchAction,
    CorrectnessError,
    DeleteChange,
    MemoryFileSystem,
    NotApplyPatch,
    UpdateChange,
    intercept_apply_patch,
)

PATCH = "*** Begin Patch\n*** Add File: foo\n+hi\n*** End Patch"


def _heredoc(prefix: str = "", suffix: str = "", delim: str = "'PATCH'") -> str:
    end = delim.strip("'\"")
    return f"{prefix}apply_patch <<{delim}\n{PATCH}\n{end}{suffix}"


def _intercept(argv: list[str], cwd: str = "/repo", files: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    return intercept_apply_patch(argv, cwd, MemoryFileSystem(files or {}))


@pytest.mark.parametrize(
    ("argv", "workdir"),
    [
        (["apply_patch", PATCH], None),
        (["applypatch", PATCH + "\n"], None),
        (["bash", "-lc", _heredoc()], None),
        (["bash", "-c", _heredoc()], None),
        (["/usr/bin/zsh", "-lc", _heredoc(delim="EOF")], None),
        (["sh", "-c", _heredoc(delim='"X"')], None),
        (["bash", "-lc", _heredoc("cd foo && ")], "foo"),
        (["bash", "-lc", _heredoc("cd 'foo bar' && ")], "foo bar"),
        (["bash", "-lc", _heredoc('cd "foo bar" && ')], "foo bar"),
        (["bash", "-lc", _heredoc(suffix="\n\n")], None),
        (["bash", "-lc", "applypatch << 'EOF'\n" + PATCH + "\nEOF"], None),
        (["powershell.exe", "-Command", _heredoc()], None),
        (["pwsh", "-NoProfile", "-command", _heredoc()], None),
        (["cmd.exe", "/C", _heredoc("cd foo && ")], "foo"),
    ],
)
def test_recognised_forms(argv: list[str], workdir: str | None) -> None:
    result = _intercept(argv)
    assert isinstance(result, ApplyPatchAction), result
    assert result.workdir == workdir
    assert result.hunks == (AddFile("foo", "hi\n"),)


@pytest.mark.parametrize(
    "script",
    [
        _heredoc("cd foo; "),
        _heredoc("cd bar || "),
        _heredoc("cd bar | "),
        _heredoc("echo foo && "),
        _heredoc("cd foo && cd bar && "),
        _heredoc("cd foo bar && "),
        _heredoc("cd -P foo && "),
        _heredoc("cd - && "),
        _heredoc("cd bar && ", " && echo done"),
        _heredoc("echo foo; cd bar && "),
        _heredoc(suffix="\necho after"),
        _heredoc("FOO=1 "),
        _heredoc('cd "$HOME/x" && '),
        "apply_patch foo <<'PATCH'\n" + PATCH + "\nPATCH",
        "apply_patch '" + PATCH + "'",
        "bash -lc \"apply_patch <<'EOF'\n" + PATCH + '\nEOF"',
        "ls -la",
        "",
    ],
)
def test_not_recognised_scripts(script: str) -> None:
    assert _intercept(["bash", "-lc", script]) == NotApplyPatch()


@pytest.mark.parametrize(
    "argv",
    [
        ["ls", "-la"],
        ["bash", "-x", _heredoc()],
        ["fish", "-c", _heredoc()],
        ["apply_patch"],
        ["apply_patch", PATCH, "extra"],
        # The shell path follows the cwd's convention: a Windows path with a POSIX cwd.
        ["C:\\Program Files\\PowerShell\\7\\pwsh.exe", "-NoProfile", "-Command", _heredoc()],
    ],
)
def test_not_recognised_argv(argv: list[str]) -> None:
    assert _intercept(argv) == NotApplyPatch()


def test_windows_shell_path_with_windows_cwd() -> None:
    argv = ["C:\\Program Files\\PowerShell\\7\\pwsh.exe", "-NoProfile", "-Command", _heredoc()]
    result = _intercept(argv, cwd="C:\\work")
    assert isinstance(result, ApplyPatchAction)
    assert result.changes == (AddChange("C:\\work\\foo", "hi\n"),)


def test_implicit_invocation_errors() -> None:
    expected = (
        "apply_patch verification failed: patch detected without explicit call to "
        'apply_patch. Rerun as ["apply_patch", "<patch>"]'
    )
    for argv in ([PATCH], ["bash", "-lc", PATCH], ["pwsh", "-Command", PATCH]):
        result = _intercept(argv)
        assert isinstance(result, CorrectnessError)
        assert result.message == expected


def test_parse_error_in_recognised_call() -> None:
    result = _intercept(["apply_patch", "*** Begin Patch\n*** Add File: x"])
    assert result == CorrectnessError(
        "invalid patch: The last line of the patch must be '*** End Patch'"
    )


def test_verification_reads_and_resolves_paths() -> None:
    files = {"/repo/sub/a.txt": "one\n", "/repo/sub/old.txt": "x\n", "/repo/gone.txt": "g"}
    patch = (
        "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+two\n"
        "*** Update File: ./old.txt\n*** Move to: ../new.txt\n@@\n-x\n+y\n"
        "*** Delete File: ../gone.txt\n*** Add File: /abs/n.txt\n+n\n*** End Patch"
    )
    script = f"cd sub && apply_patch <<'EOF'\n{patch}\nEOF"
    result = _intercept(["bash", "-lc", script], files=files)
    assert isinstance(result, ApplyPatchAction)
    assert result.cwd == "/repo/sub"
    assert result.changes == (
        UpdateChange("/repo/sub/a.txt", None, "one\n", "two\n"),
        UpdateChange("/repo/sub/old.txt", "/repo/new.txt", "x\n", "y\n"),
        DeleteChange("/repo/gone.txt", "g"),
        AddChange("/abs/n.txt", "n\n"),
    )
    assert result.written_paths() == (
        "/repo/sub/a.txt",
        "/repo/sub/old.txt",
        "/repo/new.txt",
        "/repo/gone.txt",
        "/abs/n.txt",
    )


def test_absolute_workdir_replaces_cwd() -> None:
    result = _intercept(["bash", "-lc", _heredoc("cd /tmp/w && ")])
    assert isinstance(result, ApplyPatchAction)
    assert result.cwd == "/tmp/w"
    assert result.changes == (AddChange("/tmp/w/foo", "hi\n"),)


@pytest.mark.parametrize(
    ("patch", "files", "message"),
    [
        (
            "*** Update File: missing.txt\n@@\n-a\n+b",
            {},
            "Failed to read file to update /repo/missing.txt: No such file or directory (os error 2)",
        ),
        (
            "*** Delete File: c.txt",
            {},
            "Failed to read /repo/c.txt: No such file or directory (os error 2)",
        ),
        (
            "*** Delete File: d",
            {"/repo/d/x": ""},
            "Failed to read /repo/d: Is a directory (os error 21)",
        ),
        (
            "*** Update File: f/x\n@@\n-a",
            {"/repo/f": ""},
            "Failed to read file to update /repo/f/x: Not a directory (os error 20)",
        ),
        (
            "*** Update File: a.txt\n@@\n-nothere\n+x",
            {"/repo/a.txt": "one\n"},
            "Failed to find expected lines in /repo/a.txt:\nnothere",
        ),
        (
            "*** Add File: g.txt\n+g\n*** Update File: a.txt\n@@ nope\n-one",
            {"/repo/a.txt": "one\n"},
            "Failed to find context 'nope' in /repo/a.txt",
        ),
    ],
)
def test_verification_error_texts(patch: str, files: dict[str, str], message: str) -> None:
    fs = MemoryFileSystem(files)
    before = dict(fs.files)
    argv = ["apply_patch", f"*** Begin Patch\n{patch}\n*** End Patch"]
    result = intercept_apply_patch(argv, "/repo", fs)
    assert result == CorrectnessError(message)
    assert result.message == "apply_patch verification failed: " + message
    assert fs.files == before
