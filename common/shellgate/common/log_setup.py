"""One logging set-up for both daemons: timestamps, level, component, thread/call ids, text or JSON.

`configure_logging` replaces the root handlers. Thread and call ids come from context
variables (`log_context`) set by the servicer around a call, so every line logged while
the call runs carries them without each call site passing them.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime
import json
import logging
import sys
from collections.abc import Iterator
from typing import Literal

__all__ = [
    "LOG_FORMATS",
    "LOG_FORMAT_HELP",
    "JsonFormatter",
    "TextFormatter",
    "configure_logging",
    "log_context",
    "log_ids",
    "tag_log",
]

LOG_FORMATS = ("text", "json")
LOG_FORMAT_HELP = "text (default) or json: one JSON object per line"
LogFormat = Literal["text", "json"]

_thread_id: contextvars.ContextVar[str] = contextvars.ContextVar("log_thread_id", default="")
_call_id: contextvars.ContextVar[str] = contextvars.ContextVar("log_call_id", default="")


@contextlib.contextmanager
def log_context(thread_id: str = "", call_id: str = "") -> Iterator[None]:
    """Tag every record logged inside with the thread and call ids."""
    thread_token = _thread_id.set(thread_id)
    call_token = _call_id.set(call_id)
    try:
        yield
    finally:
        _call_id.reset(call_token)
        _thread_id.reset(thread_token)


def tag_log(thread_id: str = "", call_id: str = "") -> None:
    """Tag the rest of the current task (and tasks it starts) with thread and call ids.

    For a gRPC handler, which runs in a task of its own: unlike `log_context` it needs no
    reset, so it is safe inside an async generator finalised elsewhere.
    """
    _thread_id.set(thread_id)
    _call_id.set(call_id)


def log_ids() -> tuple[str, str]:
    """The (thread id, call id) the current task is tagged with ("" when none)."""
    return _thread_id.get(), _call_id.get()


def _timestamp(record: logging.LogRecord) -> str:
    at = datetime.datetime.fromtimestamp(record.created, datetime.UTC)
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class _ContextFilter(logging.Filter):
    """Adds `component`, `thread_id` and `call_id` to every record."""

    def __init__(self, component: str) -> None:
        super().__init__()
        self.component = component

    def filter(self, record: logging.LogRecord) -> bool:
        record.component = self.component
        record.thread_id = _thread_id.get()
        record.call_id = _call_id.get()
        return True


class TextFormatter(logging.Formatter):
    """`2026-01-01T00:00:00.000Z INFO router shellgate.x: message thread=t call=c`."""

    def format(self, record: logging.LogRecord) -> str:
        """One line (plus the traceback, when there is one)."""
        ids = "".join(
            f" {key}={value}"
            for key, value in (("thread", getattr(record, "thread_id", "")),
                               ("call", getattr(record, "call_id", "")))
            if value
        )  # fmt: skip
        line = (
            f"{_timestamp(record)} {record.levelname} {getattr(record, 'component', '-')} "
            f"{record.name}: {record.getMessage()}{ids}"
        )
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, component, logger, message, thread, call."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as compact JSON."""
        out: dict[str, object] = {
            "time": _timestamp(record),
            "level": record.levelname,
            "component": getattr(record, "component", ""),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key in ("thread_id", "call_id"):
            value = getattr(record, key, "")
            if value:
                out[key.removesuffix("_id")] = value
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False, separators=(",", ":"))


def configure_logging(level: int, log_format: str, component: str) -> logging.Handler:
    """Route every logger to stderr in `log_format`; returns the handler (filters go on it)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    handler.addFilter(_ContextFilter(component))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    return handler
