"""Hand-encoded output events for the Start/Attach streams (the hot path of a big output).

A `StartResponse` and an `AttachResponse` are the same message on the wire (`event = 1`),
so an output chunk is encoded once as a short header followed by its payload: one copy
of the data instead of protobuf's field set plus `SerializeToString`. The bytes are exactly
what protobuf produces (fields in number order, proto3 defaults omitted), which
tests/unit/test_execserver_wire.py checks against the generated classes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc

# Tags: (field number << 3) | wire type; 0 = varint, 2 = length-delimited.
_TAG_EVENT = b"\x0a"  # StartResponse/AttachResponse.event = 1
_TAG_MORE = b"\x12"  # StartResponse.more = 2 (a coalesced Start stream)
_TAG_OUTPUT = b"\x1a"  # ProcessEvent.output = 3
_TAG_SEQ = b"\x08"  # OutputChunk.seq = 1
_TAG_STREAM = b"\x10"  # OutputChunk.stream = 2
_TAG_DATA = b"\x1a"  # OutputChunk.data = 3
_TAG_END_OFFSET = b"\x20"  # OutputChunk.end_offset = 4


def varint(value: int) -> bytes:
    """Base-128 varint of a non-negative integer (as protobuf writes uint64 and enums ≥ 0)."""
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_varint = varint


def _varint_fields(fields: tuple[tuple[bytes, int], ...]) -> bytes:
    # proto3: fields at their default (0, empty) are not written.
    out = b""
    for tag, value in fields:
        if value < 0:
            raise ValueError("varint fields must be non-negative")
        if value:
            out += tag + _varint(value)
    return out


def chunk_message(
    path: tuple[bytes, ...],
    fields: tuple[tuple[bytes, int], ...],
    data_tag: bytes,
    data: bytes,
    trailing: tuple[tuple[bytes, int], ...] = (),
) -> bytes:
    """A message nested along `path` (length-delimited tags, outermost first) whose innermost
    message holds varint `fields` (tag, non-negative value, in field-number order), the
    bytes field `data_tag`, then varint `trailing` fields (numbered after it) — protobuf's
    exact encoding, with one copy of the data.
    """
    body = _varint_fields(fields)
    size = len(data)
    if size:
        body += data_tag + _varint(size)
    tail = _varint_fields(trailing)
    length = len(body) + size + len(tail)
    head = body
    for tag in reversed(path):
        head = tag + _varint(length) + head
        length = len(head) + size + len(tail)
    if not size and not tail:
        return head
    # The one copy of the payload.
    return b"".join((head, data, tail))


def output_event(seq: int, stream: int, data: bytes, end_offset: int = 0) -> bytes:
    """The serialized Start/Attach response carrying one output chunk (seq, stream, data,
    end_offset)."""
    return chunk_message(
        (_TAG_EVENT, _TAG_OUTPUT), ((_TAG_SEQ, seq), (_TAG_STREAM, stream)), _TAG_DATA, data,
        ((_TAG_END_OFFSET, end_offset),),
    )  # fmt: skip


def start_batch(responses: list[bytes]) -> bytes:
    """Serialized StartResponses joined into one: the first's `event`, the others' as `more`.

    Every StartResponse is exactly one `event` field (tag 1) and `more` is tag 2 of the same
    message type, so each later response is re-tagged in place — no decoding, no copy of
    the payload beyond the join.
    """
    first, rest = responses[0], responses[1:]
    assert all(r[:1] == _TAG_EVENT for r in responses)
    return b"".join((first, *(_TAG_MORE + r[1:] for r in rest)))


def serialize_response(response: Any) -> bytes:
    """Response serializer of the event streams: pre-encoded bytes pass through as they are."""
    if type(response) is bytes:
        return response
    data: bytes = response.SerializeToString()
    return data


class _Capture:
    """Stands in for the server while generated code registers its method handlers."""

    def __init__(self) -> None:
        self.service = ""
        self.handlers: dict[str, Any] = {}

    def add_generic_rpc_handlers(self, handlers: Any) -> None:
        """Ignored: the generic handler is rebuilt from the registered table."""

    def add_registered_method_handlers(self, service: str, handlers: dict[str, Any]) -> None:
        """Record the generated method table."""
        self.service = service
        self.handlers = dict(handlers)


def add_with_pre_encoded(
    add_to_server: Callable[[Any, Any], None],
    servicer: Any,
    server: Any,
    pre_encoded: tuple[str, ...],
) -> None:
    """Register a service like its generated code, the `pre_encoded` methods with
    `serialize_response` (their handlers may yield ready-made bytes).

    `server` is a grpc.aio.Server; its stubs lack `add_registered_method_handlers`.
    """
    capture = _Capture()
    add_to_server(servicer, capture)
    handlers = capture.handlers
    for name in pre_encoded:
        handlers[name] = handlers[name]._replace(response_serializer=serialize_response)
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(capture.service, handlers),)
    )
    server.add_registered_method_handlers(capture.service, handlers)
