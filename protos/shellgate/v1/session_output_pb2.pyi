from shellgate.v1 import exec_pb2 as _exec_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DrainRequest(_message.Message):
    __slots__ = ("process_id", "release", "hold", "acknowledged_through_seq")
    PROCESS_ID_FIELD_NUMBER: _ClassVar[int]
    RELEASE_FIELD_NUMBER: _ClassVar[int]
    HOLD_FIELD_NUMBER: _ClassVar[int]
    ACKNOWLEDGED_THROUGH_SEQ_FIELD_NUMBER: _ClassVar[int]
    process_id: str
    release: bool
    hold: bool
    acknowledged_through_seq: int
    def __init__(self, process_id: _Optional[str] = ..., release: _Optional[bool] = ..., hold: _Optional[bool] = ..., acknowledged_through_seq: _Optional[int] = ...) -> None: ...

class DrainResponse(_message.Message):
    __slots__ = ("captured", "head", "tail", "omitted_bytes", "through_seq", "through_offset", "exited", "exit_status", "closed", "failure")
    CAPTURED_FIELD_NUMBER: _ClassVar[int]
    HEAD_FIELD_NUMBER: _ClassVar[int]
    TAIL_FIELD_NUMBER: _ClassVar[int]
    OMITTED_BYTES_FIELD_NUMBER: _ClassVar[int]
    THROUGH_SEQ_FIELD_NUMBER: _ClassVar[int]
    THROUGH_OFFSET_FIELD_NUMBER: _ClassVar[int]
    EXITED_FIELD_NUMBER: _ClassVar[int]
    EXIT_STATUS_FIELD_NUMBER: _ClassVar[int]
    CLOSED_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    captured: bool
    head: bytes
    tail: bytes
    omitted_bytes: int
    through_seq: int
    through_offset: int
    exited: bool
    exit_status: _exec_pb2.ExitStatus
    closed: bool
    failure: str
    def __init__(self, captured: _Optional[bool] = ..., head: _Optional[bytes] = ..., tail: _Optional[bytes] = ..., omitted_bytes: _Optional[int] = ..., through_seq: _Optional[int] = ..., through_offset: _Optional[int] = ..., exited: _Optional[bool] = ..., exit_status: _Optional[_Union[_exec_pb2.ExitStatus, _Mapping]] = ..., closed: _Optional[bool] = ..., failure: _Optional[str] = ...) -> None: ...
