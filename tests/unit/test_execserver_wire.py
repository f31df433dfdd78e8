"""The hand-encoded Start/Attach output events are byte-identical to protobuf's encoding."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shellgate.common.enum_maps import STREAMS
from shellgate.common.grpc import output_encoding as wire
from shellgate.common.process.base import ExitStatus, Stream
from shellgate.common.process.retention import SeqChunk
from shellgate.execserver.follow import Awaiting, Closed, Exited, Gap
from shellgate.execserver.servicer import _wire_event
from shellgate.v1 import exec_pb2 as pb

RESPONSES = (pb.StartResponse, pb.AttachResponse)


def _protobuf(cls: type, seq: int, stream: int, data: bytes, end_offset: int = 0) -> bytes:
    response = cls()
    response.event.output.seq = seq
    response.event.output.stream = stream
    response.event.output.data = data
    response.event.output.end_offset = end_offset
    out: bytes = response.SerializeToString()
    return out


# Lengths around every varint boundary the header can cross (1, 2, 3 and 4 bytes).
BOUNDARY_SIZES = [0, 1, 126, 127, 128, 129, 16_370, 16_383, 16_384, 16_400, 2**21 - 10,
                  2**21, 2**21 + 1]  # fmt: skip


@pytest.mark.parametrize("cls", RESPONSES)
@pytest.mark.parametrize("size", BOUNDARY_SIZES)
@pytest.mark.parametrize("seq", [0, 1, 127, 128, 300, 2**32, 2**64 - 1])
@pytest.mark.parametrize("stream", [0, *STREAMS.to_wire.values()])
@pytest.mark.parametrize("end_offset", [0, 2**40])
def test_output_event_matches_protobuf(
    cls: type, size: int, seq: int, stream: int, end_offset: int
) -> None:
    data = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    expected = _protobuf(cls, seq, stream, data, end_offset)
    assert wire.output_event(seq, stream, data, end_offset) == expected


@settings(max_examples=300, deadline=None)
@given(
    seq=st.integers(min_value=0, max_value=2**64 - 1),
    stream=st.sampled_from([0, *STREAMS.to_wire.values()]),
    data=st.binary(max_size=600),
    end_offset=st.integers(min_value=0, max_value=2**64 - 1),
)
def test_output_event_matches_protobuf_property(
    seq: int, stream: int, data: bytes, end_offset: int
) -> None:
    encoded = wire.output_event(seq, stream, data, end_offset)
    for cls in RESPONSES:
        assert encoded == _protobuf(cls, seq, stream, data, end_offset)
    # And it decodes to the same fields.
    out = pb.StartResponse.FromString(encoded).event.output
    assert (out.seq, out.stream, out.data, out.end_offset) == (seq, stream, data, end_offset)


def test_field_order_is_seq_stream_data() -> None:
    # event(1) { output(3) { seq(1)=5, stream(2)=STDERR, data(3)="ab" } }
    assert wire.output_event(5, pb.OUTPUT_STREAM_STDERR, b"ab") == (
        b"\x0a\x0a\x1a\x08\x08\x05\x10\x02\x1a\x02ab"
    )


def test_negative_fields_are_refused() -> None:
    with pytest.raises(ValueError):
        wire.output_event(-1, 1, b"x")


def test_serializer_passes_bytes_and_serializes_messages() -> None:
    raw = wire.output_event(1, 1, b"x")
    assert wire.serialize_response(raw) is raw
    msg = pb.StartResponse(event=pb.ProcessEvent(closed=pb.ProcessClosed(seq=3)))
    assert wire.serialize_response(msg) == msg.SerializeToString()


@pytest.mark.parametrize("stream", list(Stream))
def test_servicer_output_event_is_the_protobuf_encoding(stream: Stream) -> None:
    chunk = SeqChunk(42, stream, b"hello" * 1000, 5000)
    expected = _protobuf(pb.AttachResponse, 42, STREAMS[stream], chunk.data, 5000)
    assert _wire_event(chunk) == expected


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        (Gap(3, 7), pb.ProcessEvent(gap=pb.OutputGap(
            first_seq=3, last_seq=7, reason=pb.GAP_REASON_EVICTED))),
        (Gap(3, 7, slow_consumer=True), pb.ProcessEvent(gap=pb.OutputGap(
            first_seq=3, last_seq=7, reason=pb.GAP_REASON_SLOW_CONSUMER))),
        (Exited(9, ExitStatus(code=0), False), pb.ProcessEvent(exited=pb.ProcessExited(
            seq=9, status=pb.ExitStatus(code=0)))),
        (Closed(10, True), pb.ProcessEvent(closed=pb.ProcessClosed(
            seq=10, sandbox_denied=True))),
        (Awaiting(4), pb.ProcessEvent(awaiting_input=pb.AwaitingInput(last_seq=4))),
    ],
)  # fmt: skip
def test_servicer_other_events_go_through_protobuf(event: object, expected: object) -> None:
    for cls in RESPONSES:
        assert _wire_event(event) == cls(event=expected).SerializeToString()  # type: ignore[arg-type]


def test_event_streams_are_registered_with_the_pass_through_serializer() -> None:
    from shellgate.execserver.server import SERVICE_NAME, add_exec_service

    class Recorder:
        def __init__(self) -> None:
            self.registered: dict[str, object] = {}
            self.generic: tuple[object, ...] = ()

        def add_generic_rpc_handlers(self, handlers: tuple[object, ...]) -> None:
            self.generic = handlers

        def add_registered_method_handlers(self, service: str, handlers: dict) -> None:  # type: ignore[type-arg]
            assert service == SERVICE_NAME
            self.registered = handlers

    recorder = Recorder()
    from shellgate.v1 import exec_pb2_grpc

    add_exec_service(exec_pb2_grpc.ExecServiceServicer(), recorder)  # type: ignore[arg-type]
    handlers = recorder.registered
    assert len(handlers) == 16 and len(recorder.generic) == 1
    for name in ("Start", "Attach"):
        assert handlers[name].response_serializer is wire.serialize_response  # type: ignore[attr-defined]
    read = handlers["Read"]
    assert read.response_serializer == pb.ReadResponse.SerializeToString  # type: ignore[attr-defined]
