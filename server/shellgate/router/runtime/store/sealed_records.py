"""The sealed forms of what grants, as `redis_state` stores them (see `record_seal`).

Each function turns one record into the text Redis keeps, or reads such a text back and
returns None (after reporting it to the seal) when its seal does not verify.
"""

from __future__ import annotations

import json

from shellgate.router.runtime.store.record_seal import RecordSeal
from shellgate.router.runtime.store.shared_state import PendingRecord

__all__ = ["approved_member", "opened_grant", "pending_text", "sealed_grant", "unsealed_pending"]


def approved_member(seal: RecordSeal, thread_id: str, digest: str) -> str:
    """The set member of an "approved for session" digest (bound to its thread: a member
    copied from another thread, or a bare digest written by someone else, is no approval)."""
    return f"{digest}.{seal.seal('approved', thread_id, digest)}"


def sealed_grant(seal: RecordSeal, thread_id: str, name: str, value: str) -> str:
    """A sticky grant's stored value: `<seal>:<value>`."""
    return f"{seal.seal('grant', thread_id, name, value)}:{value}"


def opened_grant(seal: RecordSeal, thread_id: str, name: str, stored: str) -> str | None:
    """The grant's value when its seal verifies; None (reported) otherwise."""
    mac, _, value = stored.partition(":")
    if seal.verify(mac, "grant", thread_id, name, value):
        return value
    seal.forged("sticky grant", thread=thread_id, grant=name)
    return None


def _pending_fields(thread_id: str, record: PendingRecord) -> tuple[str, ...]:
    return (thread_id, record.approval_id, record.call_id, record.instance_id, record.payload)


def pending_text(seal: RecordSeal, thread_id: str, record: PendingRecord) -> str:
    """A parked call's stored JSON, sealed with its thread and approval id."""
    mac = seal.seal("pending", *_pending_fields(thread_id, record))
    return json.dumps(
        {"call_id": record.call_id, "instance_id": record.instance_id,
         "payload": record.payload, "seal": mac},
        separators=(",", ":"),
    )  # fmt: skip


def unsealed_pending(
    seal: RecordSeal, thread_id: str, approval_id: str, raw: str | bytes, ttl_ms: int
) -> PendingRecord | None:
    """The parked call back, or None (reported): nothing is resumed from a parked call
    nobody here parked."""
    try:
        data = json.loads(raw)
        record = PendingRecord(
            approval_id, str(data["call_id"]), str(data["instance_id"]),
            str(data.get("payload", "")), max(0, int(ttl_ms)),
        )  # fmt: skip
        mac = str(data.get("seal", ""))
    except (ValueError, KeyError, TypeError):
        record, mac = None, ""
    if record is None or not seal.verify(mac, "pending", *_pending_fields(thread_id, record)):
        seal.forged("parked call", thread=thread_id, approval_id=approval_id)
        return None
    return record
