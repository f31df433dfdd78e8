"""Output rendering: floats, Rust str debug and the retention-overflow body (spec 01 §5.1, 05 §3.6)."""

from __future__ import annotations

import pytest
from shellgate.router.decode.rust_text import debug_str
from shellgate.router.decode.serde_json.render import format_float
from shellgate.router.output.texts import unified_overflow_body
from shellgate.router.output.truncation import TruncationPolicy

# Every example of spec 01 §5.1 "Float rendering".
FLOATS = [
    (1000.0, "1000.0"), (1000.5, "1000.5"), (2.5, "2.5"), (45.0, "45.0"), (0.1, "0.1"),
    (0.0001, "0.0001"), (0.00001, "0.00001"), (0.00001234, "0.00001234"),
    (123456.789, "123456.789"), (1e15, "1000000000000000.0"),
    (9999999999999998.0, "9999999999999998.0"), (-1.5, "-1.5"), (-0.0, "-0.0"),
    (1e16, "1e+16"), (-1e16, "-1e+16"), (1e20, "1e+20"), (1e21, "1e+21"),
    (1.2345678901234567e23, "1.2345678901234567e+23"), (1e100, "1e+100"),
    (1.7976931348623157e308, "1.7976931348623157e+308"), (1e-6, "1e-6"), (1.5e-7, "1.5e-7"),
    (5e-324, "5e-324"), (0.0, "0.0"),
]  # fmt: skip


@pytest.mark.parametrize(("value", "text"), FLOATS)
def test_float_rendering(value: float, text: str) -> None:
    assert format_float(value) == text


def test_debug_str_escapes_like_rust() -> None:
    assert debug_str("yes") == '"yes"'
    assert debug_str('a"b\\c') == '"a\\"b\\\\c"'
    assert debug_str("\t\r\n\0") == '"\\t\\r\\n\\0"'
    assert debug_str("it's") == '"it\'s"'  # str Debug never escapes a single quote
    assert debug_str("\x01\x7f") == '"\\u{1}\\u{7f}"'
    assert debug_str("é中😀") == '"é中😀"'
    assert debug_str("\u200b") == '"\\u{200b}"'  # format character: not printable


def test_overflow_body_fits_without_warning() -> None:
    head, tail = "h" * 10, "t" * 10
    body = unified_overflow_body(head, tail, 940323, TruncationPolicy.tokens(400000))
    assert body == head + "\n... 940323 bytes omitted ...\n" + tail


def test_overflow_body_truncated_replaces_total_lines() -> None:
    head, tail = "a" * 524288, "b" * 524288
    body = unified_overflow_body(head, tail, 940323, TruncationPolicy.tokens(10000))
    assert body.startswith(
        "Warning: truncated output (original token count: 497225)\n"
        "... 940323 bytes omitted ...\n\n" + "a" * 20000 + "…252152 tokens truncated…"
    )
    assert body.endswith("…252152 tokens truncated…" + "b" * 20000)


def test_powershell_prefix_compares_the_whole_prefix() -> None:
    from shellgate.router.envelope import POWERSHELL_UTF8_PREFIX, launch_argv
    from shellgate.router.handler.shells import ShellType

    pwsh = ShellType.POWERSHELL
    near = "[Console]::OutputEncoding=[System.Text.Encoding]::UTF8; ls"
    assert launch_argv(["pwsh", "-Command", near], pwsh)[-1] == POWERSHELL_UTF8_PREFIX + near
    kept = "  " + POWERSHELL_UTF8_PREFIX + "ls"
    assert launch_argv(["pwsh", "-Command", kept], pwsh)[-1] == kept
