"""Model-facing texts (spec 05 §1.4–§1.6, §3.6, §3.7, §4) and byte decoding (§1.2)."""

from __future__ import annotations

from shellgate.router.output.decoding import bytes_to_string_smart, decode_utf8_lossy
from shellgate.router.output.head_tail import HeadTailBuffer
from shellgate.router.output.texts import (
    UnifiedExecErrorText,
    abort_message,
    classic_duration_seconds,
    format_batch_output,
    format_exec_output_freeform,
    io_error_text,
    render_unified_response,
    unified_body_from_snapshot,
    unified_overflow_body,
    unified_response_text,
    write_stdin_failed,
)
from shellgate.router.output.truncation import TruncationPolicy

TOKENS = TruncationPolicy.tokens(10_000)


def test_classic_duration_rust_f32_display() -> None:
    expected = {
        0: "0",
        45: "0",
        50: "0.1",
        149: "0.1",
        150: "0.2",
        999: "1",
        1000: "1",
        1049: "1",
        1250: "1.3",
        12_345: "12.3",
        100_000: "100",
        10_003: "10",
    }
    for ms, text in expected.items():
        assert classic_duration_seconds(ms) == text, ms


def test_freeform_examples() -> None:
    assert (
        format_exec_output_freeform(0, 1000, "tool harness\n", False, TOKENS)
        == "Exit code: 0\nWall time: 1 seconds\nOutput:\ntool harness\n"
    )
    assert format_exec_output_freeform(124, 10_003, "partial\n", True, TOKENS) == (
        "Exit code: 124\nWall time: 10 seconds\nOutput:\n"
        "command timed out after 10003 milliseconds\npartial\n"
    )


def test_freeform_total_lines_only_when_line_count_changes() -> None:
    many = "".join(f"line {i}\n" for i in range(200))
    out = format_exec_output_freeform(0, 0, many, False, TruncationPolicy.tokens(10))
    assert "\nTotal output lines: 200\nOutput:\n" in out
    # A cut inside one long line keeps the line count: no extra line.
    one = "x" * 1000
    out = format_exec_output_freeform(0, 0, one, False, TruncationPolicy.tokens(10))
    assert "Total output lines" not in out
    assert "Warning" not in out


def test_batch_assembly() -> None:
    assert format_batch_output(["a\n", "b"], []) == "a\n\nb"
    assert format_batch_output(["a", "b"], []) == "a\n\nb"
    assert format_batch_output(["only"], []) == "only"
    assert format_batch_output(["x\n"], ['echo "q"', "ü"]) == (
        'x\n\nCommands not run: ["echo \\"q\\"", "ü"]'
    )


def test_unified_response_layout() -> None:
    assert (
        unified_response_text(
            chunk_id="57a8f4",
            wall_time_ms=0,
            exit_code=0,
            session_id=None,
            original_token_count=2,
            output="hello\n",
            policy=TOKENS,
        )
        == "Chunk ID: 57a8f4\nWall time: 0.0000 seconds\nProcess exited with code 0\n"
        "Original token count: 2\nOutput:\nhello\n"
    )
    assert (
        unified_response_text(
            chunk_id="f60127",
            wall_time_ms=500.6,
            exit_code=None,
            session_id=85638,
            original_token_count=0,
            output="",
            policy=TOKENS,
        )
        == "Chunk ID: f60127\nWall time: 0.5006 seconds\nProcess running with session ID 85638\n"
        "Original token count: 0\nOutput:\n"
    )


def test_intercepted_apply_patch_response() -> None:
    body = "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nA a.txt\n"
    out = render_unified_response(
        chunk_id="",
        wall_time_ms=0,
        exit_code=None,
        session_id=None,
        original_token_count=None,
        body=body,
    )
    assert out == "Wall time: 0.0000 seconds\nOutput:\n" + body


def test_overflow_body_within_budget_has_no_warning() -> None:
    head, tail = "h" * 100, "t" * 100
    out = unified_overflow_body(head, tail, 940_323, TruncationPolicy.tokens(400_000))
    assert out == head + "\n... 940323 bytes omitted ...\n" + tail


def test_overflow_body_truncated() -> None:
    head, tail = "h" * 524_288, "t" * 524_288
    out = unified_overflow_body(head, tail, 940_323, TruncationPolicy.tokens(100))
    combined_tokens = -(-(524_288 * 2 + len("\n... 940323 bytes omitted ...\n")) // 4)
    assert out == (
        "Warning: truncated output (original token count: 497225)\n"
        "... 940323 bytes omitted ...\n\n"
        + "h" * 200
        + f"…{combined_tokens - 100} tokens truncated…"
        + "t" * 200
    )
    assert combined_tokens - 100 == 262_052


def test_abort_messages() -> None:
    assert abort_message("shell_command", 100) == "Wall time: 0.1 seconds\naborted by user"
    assert abort_message("exec_command", 1234) == "aborted by user after 1.2s"
    assert abort_message("apply_patch", 0) == "aborted by user after 0.0s"
    assert abort_message("write_stdin", 5000) == "aborted by user after 5.0s"


def test_error_texts() -> None:
    assert io_error_text(2, "No such file or directory") == (
        'execution error: Io(Os { code: 2, kind: NotFound, message: "No such file or directory" })'
    )
    assert "kind: Uncategorized" in io_error_text(99, "x")
    assert write_stdin_failed(UnifiedExecErrorText.unknown_process_id(999999)) == (
        "write_stdin failed: Unknown process id 999999"
    )
    assert write_stdin_failed(UnifiedExecErrorText.STDIN_CLOSED) == (
        "write_stdin failed: stdin is closed for this session; rerun exec_command with tty=true "
        "to keep stdin open"
    )


def test_lossy_decoding_like_codex() -> None:
    assert decode_utf8_lossy(bytes.fromhex("fffe")) == "\ufffd\ufffd"
    assert decode_utf8_lossy(b"caf\xe9\n") == "caf\ufffd\n"
    assert decode_utf8_lossy(b"ab\xe2\x82") == "ab\ufffd"
    assert decode_utf8_lossy(b"\xe2\x82\xacok\n") == "€ok\n"
    assert decode_utf8_lossy(b"\x98\x80cd\n") == "\ufffd\ufffdcd\n"


def test_smart_decoding_legacy_encodings() -> None:
    cases = {
        b"\xef\xf0\xe8\xec\xe5\xf0": "пример",  # Windows-1251
        b"\xcf\xf0\xe8\xe2\xe5\xf2": "Привет",  # Windows-1251
        b"\xaf\xe0\xa8\xac\xa5\xe0": "пример",  # CP866
        b"\x8f\x90\x88": "ПРИ",  # CP866 capitals
        b"\x8f\x90\x88 test": "ПРИ test",
        b"\x93\x94test": "\u201c\u201dtest",  # Windows-1252 smart quotes
        b"\x93foo\x94 \x96 \x93bar\x94": "\u201cfoo\u201d \u2013 \u201cbar\u201d",
        b"caf\xe9": "café",
        "ÐŸÑ€Ð¸Ð²ÐµÑ‚".encode(): "ÐŸÑ€Ð¸Ð²ÐµÑ‚",  # valid UTF-8 stays as is
        b"\x1b[31mred\x1b[0m": "\x1b[31mred\x1b[0m",
        bytes([0xFF, 0xFE, 0xFD]): "\ufffd\ufffd\ufffd",  # nothing plausible: lossy
        b"": "",
    }
    for data, text in cases.items():
        assert bytes_to_string_smart(data) == text, data


def test_body_from_snapshot() -> None:
    buf = HeadTailBuffer()
    buf.push(b"ok\n" + b"\xff" * 30_000)
    body, original = unified_body_from_snapshot(buf.drain(), TruncationPolicy.tokens(20))
    assert original == 7501
    assert body == (
        "Warning: truncated output (original token count: 22501)\nTotal output lines: 2\n\n"
        "ok\n" + "\ufffd" * 12 + "…22481 tokens truncated…" + "\ufffd" * 13
    )
    # A character split across two pushes in one response is reassembled.
    buf.push(b"ab\xf0\x9f")
    buf.push(b"\x98\x80cd\n")
    assert unified_body_from_snapshot(buf.drain(), TruncationPolicy.tokens(100)) == (
        "ab😀cd\n",
        3,
    )
    # Overflow: 1988899 bytes of output with a 400000-token budget keep the omission note.
    data = b"".join(b"%d\n" % i for i in range(1, 300_001)) + b"end\n"
    assert len(data) == 1_988_899
    buf.push(data)
    body, original = unified_body_from_snapshot(buf.drain(), TruncationPolicy.tokens(400_000))
    assert original == 497_225
    assert len(body.encode()) == 524_288 + 30 + 524_288
    assert "\n... 940323 bytes omitted ...\n" in body
    assert not body.startswith("Warning")
