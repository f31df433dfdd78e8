"""ApprovalKey.canonical writes exactly canonical_json(key.to_json())."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from shellgate.router.approval_identity import ApprovalKey, ApprovalKind, canonical_json

_text = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=12)


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(list(ApprovalKind)),
    _text,
    st.lists(_text, max_size=4).map(tuple),
    _text,
    st.sampled_from(["use_default", "require_escalated", "with_additional_permissions"]),
    st.one_of(st.none(), st.just('{"network":{"enabled":true}}')),
    st.one_of(st.none(), st.booleans()),
)
def test_canonical_matches_generic_encoding(
    kind: ApprovalKind,
    environment_id: str,
    command: tuple[str, ...],
    cwd: str,
    sandbox: str,
    additional: str | None,
    tty: bool | None,
) -> None:
    key = ApprovalKey(kind, environment_id, command, cwd, sandbox, additional, tty)
    assert key.canonical() == canonical_json(key.to_json())


def test_canonical_escapes_like_json_dumps() -> None:
    key = ApprovalKey(
        ApprovalKind.SHELL_COMMAND, "e\"\\", ("a\nb", "\x00\x1f\x7f", "é😀", "\ud800"), "/c", "use_default", None, None
    )  # fmt: skip
    assert key.canonical() == canonical_json(key.to_json())
