"""Optional redaction of configured secret values from streamed output, final texts and logs.

Values come from files (`RouterConfig.redact_values_files`, one value per line). Output
streams are redacted with a hold-back: the tail of a chunk that could be the start of a
secret waits for the next chunk of the same stream, so a value split across chunk boundaries
is still replaced. Held bytes are flushed (redacted) before the next `started`,
`approval_required` or `completed` event, in an output event that repeats the stream's last
seq. Limits: a value the model-facing truncation cut in the middle cannot be recognised.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
from collections.abc import AsyncIterator, Iterable, Sequence
from pathlib import Path

from shellgate.common.process.base import Stream
from shellgate.router.runtime.call.events import CompletedEvent, ExecuteEvent, OutputEvent
from shellgate.router.service.config import ConfigError

REDACTED = "[REDACTED]"
# Shorter values would turn ordinary output into noise (and reveal little when redacted).
MIN_VALUE_CHARS = 4


class RedactionConfigError(ConfigError):
    """A redaction value file is unreadable or holds a value that is too short."""


def load_values(files: Sequence[str]) -> tuple[str, ...]:
    """Secret values from files: every non-blank line (stripped) is one value."""
    values: set[str] = set()
    for path in files:
        try:
            lines = Path(path).read_text().splitlines()
        except OSError as exc:
            raise RedactionConfigError(f"redact_values_files: cannot read {path}: {exc}") from exc
        for number, line in enumerate(lines, 1):
            value = line.strip()
            if not value:
                continue
            if len(value) < MIN_VALUE_CHARS:
                # Never echo the value itself, not even in an error.
                raise RedactionConfigError(
                    f"{path}:{number}: values shorter than {MIN_VALUE_CHARS} characters "
                    "cannot be redacted safely"
                )
            values.add(value)
    return tuple(sorted(values, key=len, reverse=True))


class Redactor:
    """Replaces every configured value (longest first) with `[REDACTED]`."""

    def __init__(self, values: Iterable[str]) -> None:
        self.values = tuple(sorted(set(values), key=len, reverse=True))
        self._bytes = tuple(v.encode() for v in self.values)
        self._text_re = re.compile("|".join(re.escape(v) for v in self.values))
        self._bytes_re = re.compile(b"|".join(re.escape(v) for v in self._bytes))

    def text(self, text: str) -> str:
        """A string with every value replaced."""
        return self._text_re.sub(REDACTED, text) if self.values else text

    def data(self, data: bytes) -> bytes:
        """Bytes with every value replaced."""
        return self._bytes_re.sub(REDACTED.encode(), data) if self.values else data

    def json_text(self, text: str) -> str:
        """JSON text with every value replaced, raw and in its JSON-escaped forms."""
        out = self.text(text)
        for value in self.values:
            for escaped in {json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}:
                out = out.replace(escaped, REDACTED)
        return out

    def held_tail(self, data: bytes) -> int:
        """Length of the longest suffix of data that is a proper prefix of some value."""
        best = 0
        for value in self._bytes:
            for n in range(min(len(value) - 1, len(data)), best, -1):
                if data.endswith(value[:n]):
                    best = n
                    break
        return best

    async def events(self, events: AsyncIterator[ExecuteEvent]) -> AsyncIterator[ExecuteEvent]:
        """The same event stream with output and final texts redacted."""
        held: dict[tuple[int, Stream], tuple[int, bytes]] = {}
        async for event in events:
            if isinstance(event, OutputEvent):
                key = (event.element_index, event.stream)
                _, pending = held.pop(key, (0, b""))
                buffer = self.data(pending + event.data)
                keep = self.held_tail(buffer)
                if keep:
                    held[key] = (event.seq, buffer[-keep:])
                    buffer = buffer[:-keep]
                yield dataclasses.replace(event, data=buffer)
                continue
            for (index, stream), (seq, pending) in sorted(held.items()):
                yield OutputEvent(index, stream, seq, self.data(pending))
            held.clear()
            if isinstance(event, CompletedEvent):
                event = dataclasses.replace(
                    event,
                    output_text=self.text(event.output_text),
                    output_item_json=self.json_text(event.output_item_json),
                    model_warnings=tuple(self.text(w) for w in event.model_warnings),
                )
            yield event


class RedactingLogFilter(logging.Filter):
    """A handler filter that redacts configured values from formatted log records."""

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self._redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrite the record's message (args merged) with values replaced."""
        message = record.getMessage()
        redacted = self._redactor.text(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self._redactor.text(record.exc_text)
        return True


def install_log_filter(redactor: Redactor, logger: logging.Logger | None = None) -> None:
    """Attach a RedactingLogFilter to every handler of `logger` (default: the root logger)."""
    target = logger or logging.getLogger()
    for handler in target.handlers:
        if not any(isinstance(f, RedactingLogFilter) for f in handler.filters):
            handler.addFilter(RedactingLogFilter(redactor))
