"""Redaction of configured secret values (RouterConfig.redact_values_files): output events,
the final text and the tool output item, values split across chunks, and log records."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shellgate.common.process.base import Stream
from shellgate.router.runtime.call.events import (
    CompletedEvent,
    ExecuteEvent,
    OutputEvent,
    Termination,
)
from shellgate.router.service.config import ConfigError
from shellgate.router.service.redaction import (
    REDACTED,
    RedactingLogFilter,
    Redactor,
    load_values,
)
from shellgate.v1 import router_pb2

from tests.router_harness import completed, execute, function_item, router_config, running_router
from tests.router_harness import turn as make_turn

SECRET = 'hunter2-"quoted"-\\slash'
SPLIT_SECRET = "abcdefgh1234"


def _values_file(tmp_path: Path) -> Path:
    path = tmp_path / "redact.txt"
    path.write_text(f"{SECRET}\n\n{SPLIT_SECRET}\n")
    return path


def test_router_redacts_output_events_and_final_text(tmp_path: Path) -> None:
    config = router_config(redact_values_files=(str(_values_file(tmp_path)),))
    # The split secret is written in two pieces with a pause, so it arrives in two chunks.
    first, second = SPLIT_SECRET[:5], SPLIT_SECRET[5:]
    script = (
        f"printf '%s\\n' '{SECRET.replace(chr(39), '')}'; printf '{first}'; sleep 0.3; "
        f"printf '{second} tail\\n'; echo {SPLIT_SECRET} >&2"
    )
    with running_router(config) as router:
        request = router_pb2.ExecuteRequest(
            thread_id="r",
            turn=make_turn(),
            item=function_item("exec_command", {"cmd": script, "login": False}),
        )
        events = execute(router.stub, request)
    outputs = [e.output for e in events if e.WhichOneof("event") == "output"]
    assert len(outputs) >= 2
    data = b"".join(o.data for o in outputs)
    done = completed(events)
    for text in (data.decode(), done.output_text, done.output_item_json):
        assert SECRET not in text and SPLIT_SECRET not in text
        assert first not in text or f"{first}{second}" not in text
    assert data.count(REDACTED.encode()) == 3, data
    assert f"{REDACTED} tail\n" in done.output_text
    assert json.loads(done.output_item_json)["output"] == done.output_text


def test_missing_or_short_values_refuse_to_start(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_values([str(tmp_path / "absent")])
    short = tmp_path / "short"
    short.write_text("abc\n")
    with pytest.raises(ConfigError, match="shorter than 4") as err:
        load_values([str(short)])
    assert "abc" not in str(err.value).replace(str(short), "")


async def _stream(chunks: list[bytes]) -> AsyncIterator[ExecuteEvent]:
    for seq, chunk in enumerate(chunks, 1):
        yield OutputEvent(0, Stream.STDOUT, seq, chunk)
    yield CompletedEvent("{}", "", True, 0, None, 1, None, False, Termination.EXITED)


def _redacted_stream(redactor: Redactor, chunks: list[bytes]) -> bytes:
    async def run() -> bytes:
        out = b""
        async for event in redactor.events(_stream(chunks)):
            if isinstance(event, OutputEvent):
                out += event.data
        return out

    return asyncio.run(run())


values = st.lists(st.text("ab-Z", min_size=4, max_size=8), min_size=1, max_size=3)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(values, st.lists(st.text("ab-Zxy", max_size=12), max_size=6), st.data())
def test_streamed_redaction_never_lets_a_value_through(
    secrets: list[str], pieces: list[str], data: st.DataObject
) -> None:
    redactor = Redactor(secrets)
    # Plant the secrets between random pieces, then cut the stream at random points.
    text = "".join(p + data.draw(st.sampled_from(secrets)) for p in pieces) or secrets[0]
    raw = text.encode()
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=6)))
    chunks = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]
    out = _redacted_stream(redactor, chunks)
    for secret in secrets:
        assert secret.encode() not in out
    # Text without any value passes through unchanged, whatever the cuts.
    assert _redacted_stream(redactor, [b"xy", b"yx"]) == b"xyyx"


def test_log_records_are_redacted(caplog: pytest.LogCaptureFixture) -> None:
    redactor = Redactor([SPLIT_SECRET])
    log = logging.getLogger("shellgate.test.redaction")
    caplog.handler.addFilter(RedactingLogFilter(redactor))
    with caplog.at_level(logging.DEBUG):
        log.debug("value %s in args", SPLIT_SECRET)
        try:
            raise RuntimeError(f"failed with {SPLIT_SECRET}")
        except RuntimeError:
            log.exception("boom")
    assert SPLIT_SECRET not in caplog.text
    assert caplog.text.count(REDACTED) >= 2
