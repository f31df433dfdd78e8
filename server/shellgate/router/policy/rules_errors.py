"""Load errors of `.rules` files, with Starlark-like text and Codex's human rendering."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Span:
    """A source range: 1-based lines and columns, end exclusive."""

    line: int
    column: int
    end_line: int
    end_column: int


class RulesLoadError(Exception):
    """A `.rules` file failed to load (syntax, builtin argument or example validation)."""

    def __init__(
        self,
        path: str,
        source: str,
        span: Span | None,
        message: str,
        *,
        traceback: bool,
        plain: bool = False,
    ) -> None:
        self.path = path
        self.span = span
        # e.g. `invalid decision: deny`; the text after `error: ` in Starlark's report.
        self.message = message
        self._source = source
        self._traceback = traceback
        # Example-validation errors are reported bare (no Starlark frame), as Codex does.
        self._plain = plain
        super().__init__(self.text())

    @property
    def line(self) -> int | None:
        """1-based line of the problem, when known."""
        return None if self.span is None else self.span.line

    def text(self) -> str:
        """The full error text (Codex: `starlark error: …` with a source excerpt)."""
        if self._plain or self.span is None:
            return self.message
        lines = self._source.split("\n")
        span = self.span
        out: list[str] = []
        if self._traceback:
            first = lines[span.line - 1] if span.line - 1 < len(lines) else ""
            out += [
                "starlark error: Traceback (most recent call last):",
                f"  * {self.path}:{span.line}, in <module>",
                f"      {first.strip()}",
                f"error: {self.message}",
            ]
        else:
            out.append(f"starlark error: error: {self.message}")
        out.append(f" --> {self.path}:{span.line}:{span.column}")
        width = len(str(span.end_line))
        pad = " " * width
        out.append(f"{pad} |")
        if span.end_line == span.line:
            src = lines[span.line - 1] if span.line - 1 < len(lines) else ""
            carets = max(span.end_column - span.column, 1)
            out.append(f"{span.line:>{width}} | {src}")
            out.append(f"{pad} | {' ' * (span.column - 1)}{'^' * carets}")
        else:
            for n in range(span.line, span.end_line + 1):
                src = lines[n - 1] if n - 1 < len(lines) else ""
                mark = "/" if n == span.line else "|"
                out.append(f"{n:>{width}} | {mark} {src}")
            out.append(f"{pad} | |{'_' * max(span.end_column - 1, 1)}^")
        out.append(f"{pad} |")
        return "\n".join(out) + "\n"

    def render(self) -> str:
        """Codex's human rendering: `{path}:{line}: {message} (problem is on or around line {line})`."""
        text = self.text()
        shown = next(
            (ln for ln in text.split("\n") if ln.lstrip().startswith("error: ")),
            text.split("\n", 1)[0].strip(),
        )
        if self.span is None:
            return f"{self.path}: {shown}"
        n = self.span.line
        return f"{self.path}:{n}: {shown} (problem is on or around line {n})"
