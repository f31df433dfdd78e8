"""Codex exec-server wire rules: file:// paths and the error codes Codex's own server uses."""

from __future__ import annotations

import json

import pytest
from shellgate.common.errors import (
    FileNotFoundExecError,
    InvalidArgumentError,
    SandboxUnavailableError,
)
from shellgate.execserver.codex.wire import (
    RpcError,
    b64encode,
    encode,
    error_of,
    notification,
    output_notification,
    path_from_uri,
    uri_from_path,
)


def test_paths_are_file_uris_and_native_paths_are_refused() -> None:
    assert path_from_uri("file:///tmp/a%20b/c") == "/tmp/a b/c"
    assert uri_from_path("/tmp/a b/c") == "file:///tmp/a%20b/c"
    with pytest.raises(RpcError) as native:
        path_from_uri("/tmp/x")
    assert (native.value.code, native.value.message) == (
        -32602, "invalid URI: relative URL without a base"
    )  # fmt: skip
    with pytest.raises(RpcError):
        path_from_uri("http://host/tmp/x")


def test_domain_errors_map_to_codex_codes() -> None:
    missing = error_of(FileNotFoundExecError("No such file or directory (os error 2)", 2))
    assert (missing.code, missing.message) == (-32004, "No such file or directory (os error 2)")
    assert error_of(InvalidArgumentError("argv must not be empty")).code == -32602
    assert error_of(SandboxUnavailableError("no sandbox")).code == -32600


@pytest.mark.parametrize("name", ["b1", 'q"uote\\back', "é-ü-\u2028", "\x00ctl"])
@pytest.mark.parametrize("data", [b"", b"hi\n", bytes(range(256)) * 3])
def test_output_notification_is_byte_identical_to_the_generic_encoding(
    name: str, data: bytes
) -> None:
    fast = output_notification(name, 42, "stderr", data)
    generic = notification("process/output", {
        "processId": name, "seq": 42, "stream": "stderr", "chunk": b64encode(data),
    })  # fmt: skip
    assert encode(fast) == encode(generic)
    assert json.loads(fast.text)["params"]["chunk"] == b64encode(data)
