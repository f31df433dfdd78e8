"""The apply_patch patch format: grammar, lenient parser, hunks (spec 02 §7.1-§7.2)."""

from __future__ import annotations

from dataclasses import dataclass

from shellgate.router.apply_patch.text import rust_lines, rust_trim

BEGIN_PATCH = "*** Begin Patch"
END_PATCH = "*** End Patch"
ADD_FILE = "*** Add File: "
DELETE_FILE = "*** Delete File: "
UPDATE_FILE = "*** Update File: "
MOVE_TO = "*** Move to: "
END_OF_FILE = "*** End of File"
CONTEXT = "@@ "
EMPTY_CONTEXT = "@@"
_HEREDOC_OPENERS = ("<<EOF", "<<'EOF'", '<<"EOF"')


@dataclass(frozen=True)
class UpdateChunk:
    """One `@@` section of an update: lines to find and what replaces them."""

    change_context: str | None
    old_lines: tuple[str, ...]
    new_lines: tuple[str, ...]
    is_end_of_file: bool


@dataclass(frozen=True)
class AddFile:
    """`*** Add File:` — create (or overwrite) a file with `contents`."""

    path: str
    contents: str


@dataclass(frozen=True)
class DeleteFile:
    """`*** Delete File:` — remove a file."""

    path: str


@dataclass(frozen=True)
class UpdateFile:
    """`*** Update File:` — edit a file in place, optionally moving it."""

    path: str
    move_path: str | None
    chunks: tuple[UpdateChunk, ...]


Hunk = AddFile | DeleteFile | UpdateFile


@dataclass(frozen=True)
class ParsedPatch:
    """A parsed patch: its hunks and the patch text without any heredoc wrapper."""

    hunks: tuple[Hunk, ...]
    patch: str


class PatchParseError(Exception):
    """A patch that does not follow the grammar; `str()` is Codex's Display text."""

    def __init__(self, message: str, line_number: int | None = None) -> None:
        self.message = message
        self.line_number = line_number
        text = (
            f"invalid patch: {message}"
            if line_number is None
            else f"invalid hunk at line {line_number}, {message}"
        )
        super().__init__(text)
        self.text = text


def parse_patch(patch: str) -> ParsedPatch:
    """Parse patch text in lenient mode (the only mode used); raise PatchParseError."""
    lines = rust_lines(rust_trim(patch))
    patch_lines, hunk_lines = _boundaries_lenient(lines)
    hunks: list[Hunk] = []
    remaining = hunk_lines
    line_number = 2
    while remaining:
        hunk, used = _parse_one_hunk(remaining, line_number)
        hunks.append(hunk)
        line_number += used
        remaining = remaining[used:]
    return ParsedPatch(hunks=tuple(hunks), patch="\n".join(patch_lines))


def _boundaries_strict(lines: list[str]) -> tuple[list[str], list[str]]:
    first = rust_trim(lines[0]) if lines else None
    last = rust_trim(lines[-1]) if lines else None
    if first == BEGIN_PATCH and last == END_PATCH:
        return lines, lines[1:-1]
    if first is not None and first != BEGIN_PATCH:
        raise PatchParseError("The first line of the patch must be '*** Begin Patch'")
    raise PatchParseError("The last line of the patch must be '*** End Patch'")


def _boundaries_lenient(lines: list[str]) -> tuple[list[str], list[str]]:
    try:
        return _boundaries_strict(lines)
    except PatchParseError as original:
        # Models sometimes pass a heredoc wrapper as a literal argument; unwrap it.
        if len(lines) >= 4 and lines[0] in _HEREDOC_OPENERS and lines[-1].endswith("EOF"):
            return _boundaries_strict(lines[1:-1])
        raise original from None


def _parse_one_hunk(lines: list[str], line_number: int) -> tuple[Hunk, int]:
    # Headers tolerate padding around the marker, as Codex does.
    first = rust_trim(lines[0])
    if first.startswith(ADD_FILE):
        parts: list[str] = []
        used = 1
        for line in lines[1:]:
            if not line.startswith("+"):
                break
            parts.append(line[1:] + "\n")
            used += 1
        return AddFile(path=first[len(ADD_FILE) :], contents="".join(parts)), used
    if first.startswith(DELETE_FILE):
        return DeleteFile(path=first[len(DELETE_FILE) :]), 1
    if first.startswith(UPDATE_FILE):
        return _parse_update(first[len(UPDATE_FILE) :], lines, line_number)
    raise PatchParseError(
        f"'{first}' is not a valid hunk header. Valid hunk headers: "
        "'*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'",
        line_number,
    )


def _parse_update(path: str, lines: list[str], line_number: int) -> tuple[Hunk, int]:
    remaining = lines[1:]
    used = 1
    move_path: str | None = None
    if remaining and remaining[0].startswith(MOVE_TO):
        move_path = remaining[0][len(MOVE_TO) :]
        remaining = remaining[1:]
        used += 1
    chunks: list[UpdateChunk] = []
    while remaining:
        if not rust_trim(remaining[0]):
            # Blank lines between chunks carry nothing.
            used += 1
            remaining = remaining[1:]
            continue
        if remaining[0].startswith("*"):
            break
        chunk, chunk_used = _parse_chunk(remaining, line_number + used, not chunks)
        chunks.append(chunk)
        used += chunk_used
        remaining = remaining[chunk_used:]
    if not chunks:
        raise PatchParseError(f"Update file hunk for path '{path}' is empty", line_number)
    return UpdateFile(path=path, move_path=move_path, chunks=tuple(chunks)), used


def _parse_chunk(
    lines: list[str], line_number: int, allow_missing_context: bool
) -> tuple[UpdateChunk, int]:
    if not lines:
        raise PatchParseError("Update hunk does not contain any lines", line_number)
    context: str | None = None
    start = 1
    if lines[0] == EMPTY_CONTEXT:
        pass
    elif lines[0].startswith(CONTEXT):
        context = lines[0][len(CONTEXT) :]
    elif allow_missing_context:
        start = 0
    else:
        raise PatchParseError(
            f"Expected update hunk to start with a @@ context marker, got: '{lines[0]}'",
            line_number,
        )
    if start >= len(lines):
        raise PatchParseError("Update hunk does not contain any lines", line_number + 1)
    old: list[str] = []
    new: list[str] = []
    eof = False
    parsed = 0
    for line in lines[start:]:
        if line == END_OF_FILE:
            if parsed == 0:
                raise PatchParseError("Update hunk does not contain any lines", line_number + 1)
            eof = True
            parsed += 1
            break
        marker = line[:1]
        if marker == "":
            old.append("")
            new.append("")
        elif marker == " ":
            old.append(line[1:])
            new.append(line[1:])
        elif marker == "+":
            new.append(line[1:])
        elif marker == "-":
            old.append(line[1:])
        else:
            if parsed == 0:
                # Codex reports this one line past the chunk start, even without `@@`.
                raise PatchParseError(
                    f"Unexpected line found in update hunk: '{line}'. Every line should start "
                    "with ' ' (context line), '+' (added line), or '-' (removed line)",
                    line_number + 1,
                )
            break
        parsed += 1
    chunk = UpdateChunk(
        change_context=context,
        old_lines=tuple(old),
        new_lines=tuple(new),
        is_end_of_file=eof,
    )
    return chunk, parsed + start
