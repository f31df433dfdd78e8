"""Conformance functions for `shellgate eval` (area: execserver)."""

from __future__ import annotations

from typing import Any

from shellgate.common.process.retention import select_chunks
from shellgate.router.cli.conformance import EvalFn


def _process_read_select(value: Any) -> Any:
    """`{retained:[{seq,bytes}], process_next_seq, after_seq, max_bytes}` → `{seqs, next_seq}`."""
    retained = [(int(item["seq"]), int(item["bytes"])) for item in value["retained"]]
    max_bytes = value.get("max_bytes")
    seqs, next_seq = select_chunks(
        retained,
        int(value["process_next_seq"]),
        int(value.get("after_seq") or 0),
        None if max_bytes is None else int(max_bytes),
    )
    return {"seqs": seqs, "next_seq": next_seq}


FUNCTIONS: dict[str, EvalFn] = {"process_read_select": _process_read_select}
