"""`shellgate mcp --http-token-file`: the router's token-file format (its parser), each a subject."""

from __future__ import annotations

import hashlib
from pathlib import Path

import anyio
import pytest

pytest.importorskip("mcp", reason="the `mcp` extra is not installed")

from shellgate.mcp.auth import TokenFileVerifier


def _subject(verifier: TokenFileVerifier, token: str) -> str | None:
    access = anyio.run(verifier.verify_token, token)
    return None if access is None else access.subject


def test_subjects_of_plain_hashed_and_bare_lines(tmp_path: Path) -> None:
    digest = hashlib.sha256(b"tok-carol").hexdigest()
    path = tmp_path / "tokens"
    path.write_text(f"# callers\nalice tok-alice\n\ncarol sha256:{digest}\ntok-bare\n")
    verifier = TokenFileVerifier.from_file(str(path))
    assert _subject(verifier, "tok-alice") == "alice"
    assert _subject(verifier, "tok-carol") == "carol"
    assert _subject(verifier, "tok-bare") == "token-5"
    for wrong in ("tok-alic", "alice", digest, f"sha256:{digest}", ""):
        assert _subject(verifier, wrong) is None
    assert "tok-alice" not in repr(verifier._entries)


@pytest.mark.parametrize(
    ("text", "reason"),
    [("", "no tokens"), ("a b c\n", "expected `subject token"), ("a sha256:zz\n", "64 hex")],
)
def test_bad_files_are_refused(tmp_path: Path, text: str, reason: str) -> None:
    path = tmp_path / "tokens"
    path.write_text(text)
    with pytest.raises(ValueError, match=reason):
        TokenFileVerifier.from_file(str(path))
