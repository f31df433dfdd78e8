"""Computing an updated file's contents from update chunks (spec 02 §7.3)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from shellgate.router.apply_patch.parser import UpdateChunk
from shellgate.router.apply_patch.seek import seek_sequence

LF = "\n"
CRLF = "\r\n"


class ComputeError(Exception):
    """Chunks that cannot be placed in the file; `str()` is the model-facing text."""


@dataclass(frozen=True)
class Replacement:
    """Replace `old_len` lines at `start` with `new_lines`."""

    start: int
    old_len: int
    new_lines: tuple[str, ...]


@dataclass(frozen=True)
class _Line:
    text: str
    ending: str | None  # None only for a last line without a newline


def _split(contents: str) -> tuple[list[_Line], str]:
    # Each line keeps its own ending; the first newline decides the style of new lines
    # (so a CRLF file stays CRLF, also for replaced and inserted lines).
    lines: list[_Line] = []
    preferred: str | None = None
    pieces = contents.split("\n")
    for piece in pieces[:-1]:
        line = _Line(piece[:-1], CRLF) if piece.endswith("\r") else _Line(piece, LF)
        preferred = preferred or line.ending
        lines.append(line)
    if pieces[-1]:
        lines.append(_Line(pieces[-1], None))
    return lines, preferred or LF


def compute_replacements(
    lines: Sequence[str], chunks: Sequence[UpdateChunk], display_path: str
) -> list[Replacement]:
    """Locate every chunk in `lines` (in order); raise ComputeError when one is missing."""
    replacements: list[Replacement] = []
    index = 0
    for chunk in chunks:
        if chunk.change_context is not None:
            found = seek_sequence(lines, [chunk.change_context], index, False)
            if found is None:
                raise ComputeError(
                    f"Failed to find context '{chunk.change_context}' in {display_path}"
                )
            index = found + 1
        if not chunk.old_lines:
            # Pure addition: at the end, or before a final blank line.
            at = len(lines) - 1 if lines and lines[-1] == "" else len(lines)
            replacements.append(Replacement(at, 0, chunk.new_lines))
            continue
        pattern = chunk.old_lines
        new_lines = chunk.new_lines
        found = seek_sequence(lines, pattern, index, chunk.is_end_of_file)
        if found is None and pattern[-1] == "":
            # A trailing "" stands for the file's final newline, which `lines` omits.
            pattern = pattern[:-1]
            if new_lines and new_lines[-1] == "":
                new_lines = new_lines[:-1]
            found = seek_sequence(lines, pattern, index, chunk.is_end_of_file)
        if found is None:
            expected = "\n".join(chunk.old_lines)
            raise ComputeError(f"Failed to find expected lines in {display_path}:\n{expected}")
        replacements.append(Replacement(found, len(pattern), new_lines))
        index = found + len(pattern)
    return sorted(replacements, key=lambda r: r.start)


def derive_new_contents(original: str, chunks: Sequence[UpdateChunk], display_path: str) -> str:
    """The file's contents after applying `chunks`; raise ComputeError on a mismatch."""
    lines, preferred = _split(original)
    replacements = compute_replacements([line.text for line in lines], chunks, display_path)
    # Last to first, so earlier indices stay valid.
    for rep in reversed(replacements):
        del lines[rep.start : rep.start + rep.old_len]
        lines[rep.start : rep.start] = [_Line(text, preferred) for text in rep.new_lines]
    return "".join(line.text + (line.ending or preferred) for line in lines)
