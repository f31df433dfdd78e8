"""Hypothesis: a random valid patch followed by its inverse restores every file."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from shellgate.router.apply_patch import (
    ApplyPatchAction,
    LocalFileSystem,
    MemoryFileSystem,
    PatchFileSystem,
    apply_patch_action,
    intercept_apply_patch,
    parse_patch,
)

# Line text after a unique `L{n}:` prefix; any characters but line breaks.
_TEXT = st.text(
    alphabet=st.characters(
        blacklist_categories=("Cs",),
        blacklist_characters="\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029",
    ),
    max_size=12,
)


@dataclass
class _Counter:
    n: int = 0

    def line(self, text: str) -> str:
        self.n += 1
        return f"L{self.n}:{text}"


@dataclass(frozen=True)
class _Edit:
    start: int
    end: int
    new: tuple[str, ...]


@st.composite
def _scenario(draw: st.DrawFn) -> tuple[dict[str, list[str]], str, str]:
    """Files (relative path → lines), a patch, and its inverse."""
    ids = _Counter()
    names = draw(st.lists(st.sampled_from(["a", "b", "c", "d", "e", "f"]), unique=True, max_size=5))
    files = {
        f"{draw(st.sampled_from(['', 'src/', 'src/x/']))}{name}.txt": [
            ids.line(t) for t in draw(st.lists(_TEXT, min_size=1, max_size=8))
        ]
        for name in names
    }
    forward: list[str] = []
    inverse: list[str] = []
    for path, lines in files.items():
        kind = draw(st.sampled_from(["keep", "delete", "update", "move"]))
        if kind == "delete":
            forward.append(f"*** Delete File: {path}")
            inverse.append(
                f"*** Add File: {path}\n" + "".join(f"+{x}\n" for x in lines).rstrip("\n")
            )
        elif kind in ("update", "move"):
            edits = _draw_edits(draw, lines, ids)
            new_lines = _apply_edits(lines, edits)
            dest = f"moved/{path}" if kind == "move" else None
            forward.append(_update_hunk(path, dest, lines, edits))
            back = _inverse_edits(lines, edits)
            inverse.append(_update_hunk(dest or path, path if dest else None, new_lines, back))
    # At least one hunk: an empty patch is rejected, not applied.
    for k in range(draw(st.integers(0 if forward else 1, 2))):
        path = f"new/{k}/n{k}.txt"
        body = [ids.line(t) for t in draw(st.lists(_TEXT, min_size=1, max_size=4))]
        forward.append(f"*** Add File: {path}\n" + "\n".join(f"+{x}" for x in body))
        inverse.append(f"*** Delete File: {path}")
    wrap = "*** Begin Patch\n{}\n*** End Patch\n".format
    return files, wrap("\n".join(forward)), wrap("\n".join(inverse))


def _draw_edits(draw: st.DrawFn, lines: list[str], ids: _Counter) -> list[_Edit]:
    cuts = sorted(draw(st.lists(st.integers(0, len(lines)), min_size=2, max_size=6)))
    edits: list[_Edit] = []
    consumed = 0  # lines up to here belong to earlier chunks (their context included)
    for start, end in zip(cuts[::2], cuts[1::2], strict=False):
        first = start - 1 if start > 0 else 0
        if edits and first < consumed:
            continue
        new = tuple(ids.line(t) for t in draw(st.lists(_TEXT, max_size=3)))
        edits.append(_Edit(start, end, new))
        consumed = end + (1 if start == 0 and end < len(lines) else 0)
    return edits


def _apply_edits(lines: list[str], edits: list[_Edit]) -> list[str]:
    out = list(lines)
    for e in reversed(edits):
        out[e.start : e.end] = e.new
    return out


def _inverse_edits(lines: list[str], edits: list[_Edit]) -> list[_Edit]:
    back: list[_Edit] = []
    shift = 0
    for e in edits:
        start = e.start + shift
        back.append(_Edit(start, start + len(e.new), tuple(lines[e.start : e.end])))
        shift += len(e.new) - (e.end - e.start)
    return back


def _update_hunk(path: str, dest: str | None, lines: list[str], edits: list[_Edit]) -> str:
    out = [f"*** Update File: {path}"]
    if dest:
        out.append(f"*** Move to: {dest}")
    for e in edits:
        # One context line before (or after, at the top) keeps every chunk non-empty.
        before = [lines[e.start - 1]] if e.start > 0 else []
        after = [lines[e.end]] if not before and e.end < len(lines) else []
        out.append("@@")
        out += [f" {x}" for x in before]
        out += [f"-{x}" for x in lines[e.start : e.end]]
        out += [f"+{x}" for x in e.new]
        out += [f" {x}" for x in after]
    if not edits:
        out += ["@@", f" {lines[0]}"]
    return "\n".join(out)


def _run(patch: str, cwd: str, fs: PatchFileSystem) -> None:
    action = intercept_apply_patch(["apply_patch", patch], cwd, fs)
    assert isinstance(action, ApplyPatchAction), action
    outcome = apply_patch_action(action, fs)
    assert outcome.success, outcome
    assert len(outcome.stdout.splitlines()) == 1 + len(parse_patch(patch).hunks)


def _contents(files: dict[str, list[str]]) -> dict[str, str]:
    return {p: "".join(x + "\n" for x in lines) for p, lines in files.items()}


@settings(max_examples=300, deadline=None)
@given(_scenario())
def test_patch_then_inverse_restores_memory(case: tuple[dict[str, list[str]], str, str]) -> None:
    files, forward, inverse = case
    original = {f"/ws/{p}": c for p, c in _contents(files).items()}
    fs = MemoryFileSystem(original)
    _run(forward, "/ws", fs)
    _run(inverse, "/ws", fs)
    assert fs.files == original


@settings(max_examples=80, deadline=None)
@given(_scenario())
def test_patch_then_inverse_restores_disk(case: tuple[dict[str, list[str]], str, str]) -> None:
    files, forward, inverse = case
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for rel, content in _contents(files).items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(content.encode())
        before = {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}
        _run(forward, tmp, LocalFileSystem())
        _run(inverse, tmp, LocalFileSystem())
        after = {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}
        assert after == before
