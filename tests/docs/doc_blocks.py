"""The shell blocks of README.md and docs/*.md, and the `doc-test:` markers that qualify them.

A block is a ```sh, ```bash or ```console fence (for `console`, the `$ ` lines are the
commands). By default the test runs it as written. An HTML comment right before the fence
(blank lines may separate them; several comments add up) says otherwise, with directives
separated by `;`:

- `skip (REASON)`: not run; the reason is what the test machine lacks.
- `parse (REASON)`: nothing runs; every `shellgate …` / `shellgate-execserver …` command in
  it must parse with the real command-line parser (alternatives, long-running servers,
  set-ups of your own: a renamed flag still fails here).
- `requires TOOL…`: skipped, naming the tool, where one is not installed.
- `optional TOOL…`: run; where a tool is not installed its commands are skipped (announced
  on stderr), the rest of the block still runs.
- `stub CMD (REASON)`: `CMD` does nothing here (e.g. `pip`: installing needs the package
  index, beyond loopback; the test runs the installed checkout).
- `with COMMAND`: COMMAND (a server the block talks to) runs in the background before the
  block, until it ends; the test waits for the 127.0.0.1 ports it names (`shellgate serve`
  without `--listen`: 50051).
- `background PREFIX`: commands of the block starting with PREFIX (foreground servers) run
  in the background until the block ends; the test waits for the ports they name.
- `checkout`: the block's directory shows the checkout (its top-level entries linked), for
  blocks run from a clone (`sh scripts/…`, `python -m tests.…`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from tests.paths import REPO_ROOT

LANGS = ("sh", "bash", "console")
_FENCE = re.compile(r"^```(\w*)\s*$")
_MARKER = re.compile(r"^<!--\s*doc-test:\s*(.*?)\s*-->\s*$")
_REASONED = re.compile(r"^(skip|parse)\s*\((.+)\)$")
_STUB = re.compile(r"^stub\s+(\S+)\s*\((.+)\)$")
# The router's documented default address (`shellgate serve` with no --listen).
DEFAULT_ROUTER_PORT = 50051
_PORT = re.compile(r"(?:127\.0\.0\.1|localhost):(\d+)")


def doc_files() -> list[Path]:
    """README.md and every docs/*.md, in a stable order."""
    return [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]


@dataclass(frozen=True)
class Directives:
    """What the markers before a block say (empty: run it as written)."""

    skip: str = ""
    parse: str = ""
    requires: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()
    stubs: tuple[tuple[str, str], ...] = ()
    with_servers: tuple[str, ...] = ()
    background: tuple[str, ...] = ()
    checkout: bool = False


@dataclass(frozen=True)
class Block:
    """One shell block: where it is, its script, its directives."""

    path: Path
    line: int
    lang: str
    script: str
    directives: Directives = field(default_factory=Directives)

    @property
    def name(self) -> str:
        """`docs/codex.md:19`: the file (from the repo root) and the fence's line."""
        return f"{self.path.relative_to(REPO_ROOT)}:{self.line}"

    @property
    def mode(self) -> str:
        """skip, parse or run."""
        return "skip" if self.directives.skip else "parse" if self.directives.parse else "run"


def _split(text: str) -> list[str]:
    """The directives of a marker: `;`-separated, a `;` inside a (reason) kept."""
    parts, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == ";" and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    return [p for p in [*parts, current.strip()] if p]


def parse_directives(text: str) -> Directives:
    """The directives of a marker's text (ValueError on one it does not know)."""
    found: dict[str, object] = {}
    requires: list[str] = []
    optional: list[str] = []
    stubs: list[tuple[str, str]] = []
    servers: list[str] = []
    background: list[str] = []
    for part in _split(text):
        word = part.split(" ", 1)[0]
        rest = part[len(word) :].strip()
        if reasoned := _REASONED.match(part):
            found[reasoned.group(1)] = reasoned.group(2).strip()
        elif stub := _STUB.match(part):
            stubs.append((stub.group(1), stub.group(2).strip()))
        elif word == "requires" and rest:
            requires += rest.split()
        elif word == "optional" and rest:
            optional += rest.split()
        elif word == "with" and rest:
            servers.append(rest)
        elif word == "background" and rest:
            background.append(rest)
        elif part == "checkout":
            found["checkout"] = True
        else:
            raise ValueError(f"unknown doc-test directive {part!r}")
    return Directives(
        skip=str(found.get("skip", "")), parse=str(found.get("parse", "")),
        requires=tuple(requires), optional=tuple(optional), stubs=tuple(stubs),
        with_servers=tuple(servers), background=tuple(background),
        checkout=bool(found.get("checkout", False)),
    )  # fmt: skip


def _console_commands(body: list[str]) -> list[str]:
    """The commands of a console transcript: `$ ` lines and their continuations."""
    commands: list[str] = []
    continuing = False
    for line in body:
        if line.startswith("$ ") or continuing:
            commands.append(line[2:] if line.startswith("$ ") and not continuing else line)
            continuing = line.endswith("\\")
    return commands


def blocks_of(path: Path) -> list[Block]:
    """Every shell block of one Markdown file, with the directives of its markers."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        fence = _FENCE.match(lines[index])
        if fence is None:
            index += 1
            continue
        end = next(j for j in range(index + 1, len(lines)) if lines[j].startswith("```"))
        if fence.group(1) in LANGS:
            body = lines[index + 1 : end]
            if fence.group(1) == "console":
                body = _console_commands(body)
            markers = _markers_before(lines, index)
            found.append(Block(path, index + 1, fence.group(1), "\n".join(body) + "\n",
                               parse_directives("; ".join(markers)) if markers else Directives()))  # fmt: skip
        index = end + 1
    return found


def _markers_before(lines: list[str], fence: int) -> list[str]:
    """The doc-test comments right before a fence (blank lines between are allowed)."""
    markers: list[str] = []
    index = fence - 1
    while index >= 0 and (not lines[index].strip() or _MARKER.match(lines[index])):
        if marker := _MARKER.match(lines[index]):
            markers.insert(0, marker.group(1))
        index -= 1
    return markers


def every_block() -> list[Block]:
    """Every shell block of every documented file."""
    return [block for path in doc_files() for block in blocks_of(path)]


def logical_lines(script: str) -> list[str]:
    """The script's lines with `\\` continuations joined."""
    return [line for line in re.sub(r"\\\n\s*", " ", script).splitlines() if line.strip()]


def ports_named(command: str) -> list[int]:
    """The loopback ports a command names; `shellgate serve` with no --listen: 50051."""
    ports = [int(p) for p in _PORT.findall(command)]
    if not ports and re.search(r"\bshellgate serve\b", command) and "--listen" not in command:
        ports.append(DEFAULT_ROUTER_PORT)
    return ports
