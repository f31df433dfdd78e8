"""Hand-encoded output events for the Start/Attach streams (the hot path of a big output).

A `StartResponse` and an `AttachResponse` are the same message on the wire (`event = 1`),
so an output chunk is encoded once as a short header followed by its payload: one copy
of the data instead of protobuf's field set plus `SerializeToString`. The bytes are exactly
what protobuf produces (fields in number order, proto3 defaults omitted), which
tests/unit/test_execserver_wire.py checks against the generated classes.
"""

from __future__ import annotations

from typing import Any

# Tags: (field number << 3) | wire type; 0 = varint, 2 = length-delimited.
_TAG_EVENT = b"\x0a"  # StartResponse/AttachResponse.event = 1
_TAG_OUTPUT = b"\x1a"  # ProcessEvent.output = 3
_TAG_SEQ = b"\x08"  # OutputChunk.seq = 1
_TAG_STREAM = b"\x10"  # OutputChunk.stream = 2
_TAG_DATA = b"\x1a"  # OutputChunk.data = 3


def _varint(value: int) -> bytes:
    """Base-128 varint of a non-negative integer (as protobuf writes uint64 and enums ≥ 0)."""
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def output_event(seq: int, stream: int, data: bytes) -> bytes:
    """The serialized response carrying one output chunk (seq, wire stream enum, data)."""
    if seq < 0 or stream < 0:
        raise ValueError("seq and stream must be non-negative")
    # proto3: fields at their default (0, empty) are not written.
    fields = b""
    if seq:
        fields += _TAG_SEQ + _varint(seq)
    if stream:
        fields += _TAG_STREAM + _varint(stream)
    size = len(data)
    if size:
        fields += _TAG_DATA + _varint(size)
    chunk_len = len(fields) + size
    event = _TAG_OUTPUT + _varint(chunk_len)
    head = _TAG_EVENT + _varint(len(event) + chunk_len) + event + fields
    if not size:
        return head
    # The one copy of the payload.
    return b"".join((head, data))


def serialize_response(response: Any) -> bytes:
    """Response serializer of the event streams: pre-encoded bytes pass through as they are."""
    if type(response) is bytes:
        return response
    data: bytes = response.SerializeToString()
    return data
