"""The router's hand-encoded Execute output events are byte-identical to protobuf's."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shellgate.common.enum_maps import STREAMS
from shellgate.common.process.base import Stream
from shellgate.router.runtime.call.events import OutputEvent
from shellgate.router.service.wire.events import event_pb, output_event_bytes
from shellgate.v1 import router_pb2

# Lengths around every varint boundary the nested headers can cross.
SIZES = [0, 1, 120, 127, 128, 16_370, 16_383, 16_384, 2**21 - 12, 2**21, 2**21 + 1]


def _protobuf(event: OutputEvent) -> bytes:
    response = router_pb2.ExecuteResponse()
    response.output.element_index = event.element_index
    response.output.stream = STREAMS[event.stream]
    response.output.seq = event.seq
    response.output.data = event.data
    out: bytes = response.SerializeToString()
    return out


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("stream", list(Stream))
@pytest.mark.parametrize("element_index, seq", [(0, 0), (0, 1), (3, 128), (200, 2**40)])
def test_output_event_bytes_match_protobuf(
    size: int, stream: Stream, element_index: int, seq: int
) -> None:
    event = OutputEvent(element_index, stream, seq, b"x" * size)
    assert output_event_bytes(event) == _protobuf(event)
    assert event_pb(event) == _protobuf(event)


@settings(max_examples=200, deadline=None)
@given(
    element_index=st.integers(0, 2**32 - 1),
    stream=st.sampled_from(list(Stream)),
    seq=st.integers(0, 2**64 - 1),
    data=st.binary(max_size=3000),
)
def test_output_event_bytes_parse_back(
    element_index: int, stream: Stream, seq: int, data: bytes
) -> None:
    event = OutputEvent(element_index, stream, seq, data)
    encoded = output_event_bytes(event)
    assert encoded == _protobuf(event)
    parsed = router_pb2.ExecuteResponse.FromString(encoded)
    assert parsed.WhichOneof("event") == "output"
    assert (parsed.output.element_index, parsed.output.seq, parsed.output.data) == (
        element_index, seq, data,
    )  # fmt: skip
