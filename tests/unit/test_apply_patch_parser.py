"""apply_patch patch format: lenient parser, error texts and line numbers (spec 02 §7.2)."""

from __future__ import annotations

import pytest
from shellgate.router.apply_patch import (
    AddFile,
    DeleteFile,
    PatchParseError,
    UpdateChunk,
    UpdateFile,
    parse_patch,
)
from shellgate.router.apply_patch.seek import seek_sequence
from shellgate.router.apply_patch.text import rust_lines, rust_trim
from shellgate.router.apply_patch.update import ComputeError, derive_new_contents


def _error(text: str) -> str:
    with pytest.raises(PatchParseError) as info:
        parse_patch(text)
    return info.value.text


def test_full_patch_all_hunk_kinds() -> None:
    parsed = parse_patch(
        "*** Begin Patch\n*** Add File: path/add.py\n+abc\n+def\n"
        "*** Delete File: path/delete.py\n*** Update File: path/update.py\n"
        "*** Move to: path/update2.py\n@@ def f():\n-    pass\n+    return 123\n*** End Patch"
    )
    assert parsed.hunks == (
        AddFile("path/add.py", "abc\ndef\n"),
        DeleteFile("path/delete.py"),
        UpdateFile(
            "path/update.py",
            "path/update2.py",
            (UpdateChunk("def f():", ("    pass",), ("    return 123",), False),),
        ),
    )


def test_markers_tolerate_padding_and_heredoc_wrapper() -> None:
    assert parse_patch("*** Begin Patch \n*** Add File: foo\n+hi\n *** End Patch").hunks == (
        AddFile("foo", "hi\n"),
    )
    for opener in ("<<EOF", "<<'EOF'", '<<"EOF"'):
        text = f"{opener}\n*** Begin Patch\n*** Add File: foo\n+hi\n*** End Patch\nEOF\n"
        assert parse_patch(text).hunks == (AddFile("foo", "hi\n"),)
    # The unwrapped patch text keeps no heredoc lines.
    assert parse_patch("<<'EOF'\n*** Begin Patch\n*** End Patch\nEOF").patch == (
        "*** Begin Patch\n*** End Patch"
    )


def test_boundary_errors() -> None:
    assert _error("bad") == "invalid patch: The first line of the patch must be '*** Begin Patch'"
    # Codex: an empty patch has no first line, so it fails the last-line check.
    assert _error("") == "invalid patch: The last line of the patch must be '*** End Patch'"
    assert _error("*** Begin Patch\nbad") == (
        "invalid patch: The last line of the patch must be '*** End Patch'"
    )
    # A heredoc wrapper with fewer than 4 lines is not unwrapped.
    assert _error("<<EOF\n*** Begin Patch\nEOF").endswith("'*** Begin Patch'")


def test_hunk_errors_and_line_numbers() -> None:
    assert _error("*** Begin Patch\n*** Update File: test.py\n*** End Patch") == (
        "invalid hunk at line 2, Update file hunk for path 'test.py' is empty"
    )
    assert _error("*** Begin Patch\n*** Add File: a\n+x\n*** Bogus: y\n*** End Patch") == (
        "invalid hunk at line 4, '*** Bogus: y' is not a valid hunk header. Valid hunk headers: "
        "'*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'"
    )
    assert _error("*** Begin Patch\n*** Update File: a\n@@\n*** End Patch") == (
        "invalid hunk at line 4, Update hunk does not contain any lines"
    )
    assert _error("*** Begin Patch\n*** Update File: a\n@@\nbad\n*** End Patch") == (
        "invalid hunk at line 4, Unexpected line found in update hunk: 'bad'. Every line should "
        "start with ' ' (context line), '+' (added line), or '-' (removed line)"
    )
    assert _error("*** Begin Patch\n*** Update File: a\n@@\n*** End of File\n*** End Patch") == (
        "invalid hunk at line 4, Update hunk does not contain any lines"
    )


def test_update_chunks_blank_lines_and_eof() -> None:
    parsed = parse_patch(
        "*** Begin Patch\n*** Update File: a\n@@ ctx\n x\n\n-y\n+z\n*** End of File\n\n"
        "@@\n-q\n*** End Patch"
    )
    hunk = parsed.hunks[0]
    assert isinstance(hunk, UpdateFile)
    assert hunk.chunks == (
        UpdateChunk("ctx", ("x", "", "y"), ("x", "", "z"), True),
        UpdateChunk(None, ("q",), (), False),
    )


def test_rust_string_helpers() -> None:
    assert rust_lines("a\r\nb\n") == ["a", "b"]
    assert rust_lines("a\nb\r") == ["a", "b\r"]
    assert rust_lines("") == []
    assert rust_lines("\n") == [""]
    # U+001F is whitespace for Python but not for Rust.
    assert rust_trim("\x1f a \u3000") == "\x1f a"


def test_seek_sequence_levels() -> None:
    assert seek_sequence(["foo", "bar", "baz"], ["bar", "baz"], 0, False) == 1
    assert seek_sequence(["foo   ", "bar\t"], ["foo", "bar"], 0, False) == 0
    assert seek_sequence(["  foo  ", " bar\t"], ["foo", "bar"], 0, False) == 0
    assert seek_sequence(["a \u2014 b", "\u201cq\u201d"], ["a - b", '"q"'], 0, False) == 0
    assert seek_sequence(["one"], ["too", "many"], 0, False) is None
    assert seek_sequence(["x"], [], 5, False) == 5
    # End-of-file patterns prefer the last position.
    assert seek_sequence(["a", "b", "a"], ["a"], 0, True) == 2


def test_update_contents_rules() -> None:
    chunk = UpdateChunk(None, ("b",), ("B",), False)
    assert derive_new_contents("a\nb\nc", (chunk,), "/f") == "a\nB\nc\n"
    assert derive_new_contents("a\r\nb\r\n", (chunk,), "/f") == "a\r\nB\r\n"
    add = UpdateChunk(None, (), ("z",), False)
    assert derive_new_contents("a\n", (add,), "/f") == "a\nz\n"
    assert derive_new_contents("a\n\n", (add,), "/f") == "a\nz\n\n"
    trailing = UpdateChunk(None, ("c", ""), ("C", ""), False)
    assert derive_new_contents("a\nc\n", (trailing,), "/f") == "a\nC\n"
    with pytest.raises(ComputeError) as info:
        derive_new_contents("a\n", (UpdateChunk("zz", ("a",), (), False),), "/w/f")
    assert str(info.value) == "Failed to find context 'zz' in /w/f"
    with pytest.raises(ComputeError) as info:
        derive_new_contents("a\n", (UpdateChunk(None, ("x", "y"), (), False),), "/w/f")
    assert str(info.value) == "Failed to find expected lines in /w/f:\nx\ny"


def test_pure_modules_import_no_io() -> None:
    """Everything but local_fs is pure: no os, subprocess, asyncio, grpc or clock imports."""
    import ast
    from pathlib import Path

    import shellgate.router.apply_patch as pkg

    banned = {"os", "subprocess", "asyncio", "grpc", "time", "tempfile", "shutil", "datetime"}
    for module in Path(pkg.__file__).parent.glob("*.py"):
        if module.name == "local_fs.py":
            continue
        tree = ast.parse(module.read_text())
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                assert name.split(".")[0] not in banned, f"{module.name} imports {name}"
