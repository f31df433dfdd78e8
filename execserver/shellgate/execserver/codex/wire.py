"""JSON-RPC envelopes, error codes and `file://` paths of Codex's exec-server protocol.

Pure: no I/O. Codes and texts follow Codex 0.169.0's own `codex exec-server`.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from shellgate.common.errors import (
    FileNotFoundExecError,
    InvalidArgumentError,
    ServiceError,
)

INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
PARSE_ERROR = -32700
# Codex's exec-server answers a missing path with this code and the OS text.
NOT_FOUND = -32004

Message = dict[str, Any]


@dataclass(frozen=True)
class Encoded:
    """A message already encoded as compact JSON (UTF-8 bytes); transports send it as is."""

    text: bytes


def encode(message: Message | Encoded) -> bytes:
    """Compact JSON as UTF-8: what Codex's own server writes (an `Encoded` one as is)."""
    if isinstance(message, Encoded):
        return message.text
    return json.dumps(message, separators=(",", ":")).encode()


def output_notification(process_id: str, seq: int, stream: str, data: bytes) -> Encoded:
    """`process/output` with `chunk` = base64 of data, byte for byte what `encode` makes of
    the equivalent `notification`.

    The hot path of a big output: base64 needs no JSON escaping, so the chunk's text is
    built once as bytes instead of decoded to str, scanned and copied by `json.dumps`, and
    encoded back to UTF-8 by the transport (three passes over ~4/3 of each chunk).
    """
    head = json.dumps({"processId": process_id, "seq": seq, "stream": stream},
                      separators=(",", ":"))  # fmt: skip
    return Encoded(b"".join((
        b'{"method":"process/output","params":', head[:-1].encode(), b',"chunk":"',
        base64.b64encode(data), b'"}}',
    )))  # fmt: skip


class RpcError(Exception):
    """A JSON-RPC error answer (code + message)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def error_of(exc: ServiceError) -> RpcError:
    """The protocol error for a domain error (codes as Codex's server uses them)."""
    if isinstance(exc, FileNotFoundExecError):
        return RpcError(NOT_FOUND, exc.message)
    if isinstance(exc, InvalidArgumentError):
        return RpcError(INVALID_PARAMS, exc.message)
    if exc.code == "INTERNAL":
        return RpcError(INTERNAL_ERROR, exc.message)
    return RpcError(INVALID_REQUEST, exc.message)


def response(request_id: Any, result: Any) -> Message:
    """A success answer."""
    return {"id": request_id, "result": result}


def error_response(request_id: Any, error: RpcError) -> Message:
    """An error answer."""
    return {"id": request_id, "error": {"code": error.code, "message": error.message}}


def notification(method: str, params: Message) -> Message:
    """A server → client notification."""
    return {"method": method, "params": params}


def params_of(message: Message) -> Message:
    """The params object (absent or null → empty)."""
    params = message.get("params")
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise RpcError(INVALID_PARAMS, "params must be an object")
    return params


def field(params: Message, name: str, kind: type, *, required: bool = True) -> Any:
    """One typed field of params; a missing or mistyped one is -32602."""
    value = params.get(name)
    if value is None:
        if required:
            raise RpcError(INVALID_PARAMS, f"missing field `{name}`")
        return None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise RpcError(INVALID_PARAMS, f"invalid type for field `{name}`")
    return value


def path_from_uri(uri: Any, name: str = "path") -> str:
    """A native absolute path from a `file://` URI (native paths are refused, as Codex does)."""
    if not isinstance(uri, str):
        raise RpcError(INVALID_PARAMS, f"missing field `{name}`")
    parts = urlsplit(uri)
    if not parts.scheme:
        raise RpcError(INVALID_PARAMS, "invalid URI: relative URL without a base")
    if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
        raise RpcError(INVALID_PARAMS, f"`{name}` must be a file:// URI")
    return unquote(parts.path) or "/"


def uri_from_path(path: str) -> str:
    """The `file://` URI of an absolute path."""
    return "file://" + quote(path)


def b64decode(value: Any, name: str) -> bytes:
    """Base64 field bytes (-32602 when malformed)."""
    if not isinstance(value, str):
        raise RpcError(INVALID_PARAMS, f"missing field `{name}`")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise RpcError(INVALID_PARAMS, f"`{name}` is not valid base64") from None


def b64encode(data: bytes) -> str:
    """Base64 text of bytes."""
    return base64.b64encode(data).decode("ascii")
