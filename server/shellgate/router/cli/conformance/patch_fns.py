"""Conformance functions for `shellgate eval` (area: patch): apply_patch parsing and runtime."""

from __future__ import annotations

from typing import Any

from shellgate.router.apply_patch import (
    AddFile,
    ApplyPatchAction,
    CorrectnessError,
    DeleteFile,
    Hunk,
    MemoryFileSystem,
    PatchParseError,
    UpdateFile,
    apply_patch_action,
    intercept_apply_patch,
    parse_patch,
    verify_patch_text,
)
from shellgate.router.apply_patch.tool import EMPTY_PATCH_REJECTION
from shellgate.router.cli.conformance import EvalFailure, EvalFn


def _hunk_json(hunk: Hunk) -> dict[str, Any]:
    if isinstance(hunk, AddFile):
        return {"type": "add_file", "path": hunk.path, "contents": hunk.contents}
    if isinstance(hunk, DeleteFile):
        return {"type": "delete_file", "path": hunk.path}
    assert isinstance(hunk, UpdateFile)
    return {
        "type": "update_file",
        "path": hunk.path,
        "move_path": hunk.move_path,
        "chunks": [
            {
                "change_context": c.change_context,
                "old_lines": list(c.old_lines),
                "new_lines": list(c.new_lines),
                "is_end_of_file": c.is_end_of_file,
            }
            for c in hunk.chunks
        ],
    }


def _str(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise EvalFailure(f"`{name}` must be a string")
    return value


def _files(value: Any) -> MemoryFileSystem:
    if value is None:
        return MemoryFileSystem()
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise EvalFailure("`files` must map paths to strings")
    return MemoryFileSystem(value)


def _parse_patch(data: Any) -> Any:
    try:
        parsed = parse_patch(_str(data, "input"))
    except PatchParseError as exc:
        return {"error": exc.text}
    return {"hunks": [_hunk_json(h) for h in parsed.hunks]}


def _intercept(data: Any) -> Any:
    if not isinstance(data, dict):
        raise EvalFailure("input must be an object")
    argv = data.get("argv")
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        raise EvalFailure("`argv` must be a list of strings")
    result = intercept_apply_patch(argv, _str(data.get("cwd"), "cwd"), _files(data.get("files")))
    if isinstance(result, CorrectnessError):
        return {"result": "correctness_error", "message": result.message}
    if isinstance(result, ApplyPatchAction):
        return {
            "result": "body",
            "workdir": result.workdir,
            "hunks": [_hunk_json(h) for h in result.hunks],
        }
    return {"result": "not_apply_patch"}


def _apply(data: Any) -> Any:
    if not isinstance(data, dict):
        raise EvalFailure("input must be an object")
    fs = _files(data.get("files"))
    verified = verify_patch_text(_str(data.get("patch"), "patch"), _str(data.get("cwd"), "cwd"), fs)
    if isinstance(verified, CorrectnessError):
        return {"error": verified.message}
    assert isinstance(verified, ApplyPatchAction)
    if verified.is_empty:
        return {"error": EMPTY_PATCH_REJECTION}
    outcome = apply_patch_action(verified, fs)
    if not outcome.success:
        return {"error": outcome.stderr.rstrip("\n"), "files": dict(sorted(fs.files.items()))}
    return {"stdout": outcome.stdout, "files": dict(sorted(fs.files.items()))}


FUNCTIONS: dict[str, EvalFn] = {
    "parse_patch": _parse_patch,
    "intercept_apply_patch": _intercept,
    "apply_patch": _apply,
}
