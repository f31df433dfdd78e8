"""A parked call as data (spec 06 §3.2): JSON with explicit fields, so any router resumes it.

A parked call is stored as what produced it — the wire request's bytes (`Call.origin`: the
item and the turn), its wall-clock start — and the state it stopped in (`Running`, `Parked`
without the live element). The resuming router re-projects the stored request through the
same pipeline and `rebuild` checks that the element still projects to what the user was
shown (`fingerprint`: argv, cwd, environment, env of what is left to run); anything else is
ParkedCallChangedError and nothing runs. Never pickle: a compromised store must not become
code execution in the router, so every field is read back by hand and type-checked.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from shellgate.common.errors import ParkedCallChangedError
from shellgate.router.apply_patch.verify import ApplyPatchAction
from shellgate.router.pipeline import RouterTurn
from shellgate.router.projection import (
    ApplyPatchToolCall,
    CommandElement,
    PatchElement,
    ProjectedCall,
    ShellCall,
)
from shellgate.router.runtime.call.events import ApprovalKind, Termination
from shellgate.router.runtime.call.state import (
    ApprovalSubject,
    AwaitingApproval,
    Call,
    Finished,
    Parked,
    Running,
)

__all__ = ["FORMAT", "StoredParked", "decode_parked", "encode_parked", "fingerprint", "rebuild"]

# Bumped when the layout changes: a record of another format is refused, never guessed at.
# Optional fields (`parked_at`, `trace`, `parked.cwd_identity`) were added without a bump: older routers ignore
# them, and a record without them reads back with their defaults.
FORMAT = 1


@dataclass(frozen=True)
class StoredParked:
    """A parked call read back from the store (its element is rebuilt by `rebuild`)."""

    origin: bytes
    started_wall: float
    fingerprint: str
    running: Running
    parked: Parked
    # Wall-clock time it was parked (None in records written before the field existed).
    parked_at: float | None = None
    # The parking span's W3C trace context (`traceparent`…); empty when not tracing.
    trace_context: Mapping[str, str] = field(default_factory=dict)


def fingerprint(projected: ProjectedCall, index: int) -> str:
    """A digest of what is left to run from element `index`: argv, cwd, environment, env."""
    outcome = projected.outcome
    parts: list[object] = [projected.call_id, index]
    if isinstance(outcome, ShellCall):
        parts.append(outcome.tool)
        for element in outcome.elements[index:]:
            env = element.envelope
            parts.append(
                [list(env.argv), env.environment_id, env.cwd, [list(kv) for kv in env.env],
                 [list(kv) for kv in env.explicit_env_overrides], env.timeout_ms]
            )  # fmt: skip
            if isinstance(element, PatchElement):
                parts.append(_action(element.result))
            elif isinstance(element, CommandElement):
                parts.append(list(element.handler.argv))
    elif isinstance(outcome, ApplyPatchToolCall):
        parts += [outcome.environment_id, outcome.cwd, outcome.patch, _action(outcome.result)]
    else:
        parts.append(type(outcome).__name__)
    text = json.dumps(parts, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _action(result: object) -> list[object]:
    if isinstance(result, ApplyPatchAction):
        return [result.patch, result.cwd, result.workdir]
    return ["error", str(result)]


def _finished_json(done: Finished) -> dict[str, Any]:
    return {
        "text": done.text, "termination": done.termination.value, "success": done.success,
        "exit_code": done.exit_code, "session_id": done.session_id,
        "original_token_count": done.original_token_count, "truncated": done.truncated,
        "warnings": list(done.warnings),
    }  # fmt: skip


def encode_parked(
    awaiting: AwaitingApproval,
    parked_at: float | None = None,
    trace_context: Mapping[str, str] | None = None,
) -> str:
    """The JSON text of a parked call (its origin request must be set)."""
    call, running, parked = awaiting.call, awaiting.running, awaiting.parked
    subject = parked.subject
    data = {
        "format": FORMAT,
        "origin": base64.b64encode(call.origin).decode("ascii"),
        "started_wall": call.started_wall,
        "parked_at": parked_at,
        "trace": dict(trace_context or {}),
        "fingerprint": fingerprint(call.projected, running.index),
        "running": {
            "index": running.index, "blocks": list(running.blocks),
            "truncated": running.truncated, "warnings": list(running.warnings),
        },
        "parked": {
            "kind": parked.kind.value, "element_index": parked.element_index,
            "reason": parked.reason,
            "amendment": None if parked.amendment is None else list(parked.amendment),
            "key": parked.key,
            "subject": {"argv": list(subject.argv), "cwd": subject.cwd,
                        "environment_id": subject.environment_id},
            "retry_result": None if parked.retry_result is None
            else _finished_json(parked.retry_result),
            "cwd_identity": None if parked.cwd_identity is None
            else list(parked.cwd_identity),
        },
    }  # fmt: skip
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def decode_parked(text: str | bytes) -> StoredParked:
    """The parked call of a stored record; unreadable → ParkedCallChangedError."""
    try:
        data = _obj(json.loads(text))
        if data.get("format") != FORMAT:
            raise ValueError(f"format {data.get('format')!r}")
        r = _obj(data["running"])
        running = Running(_int(r["index"]), _strs(r["blocks"]), _bool(r["truncated"]),
                          _strs(r["warnings"]))  # fmt: skip
        p = _obj(data["parked"])
        s = _obj(p["subject"])
        subject = ApprovalSubject(_strs(s["argv"]), _str(s["cwd"]), _str(s["environment_id"]), None)
        amendment = None if p["amendment"] is None else _strs(p["amendment"])
        retry = None if p["retry_result"] is None else _finished(_obj(p["retry_result"]))
        identity = p.get("cwd_identity")
        cwd_identity = None if identity is None else _identity(identity)
        parked = Parked(ApprovalKind(_str(p["kind"])), _int(p["element_index"]),
                        _str(p["reason"]), amendment, _str(p["key"]), subject, retry,
                        cwd_identity)  # fmt: skip
        return StoredParked(
            origin=base64.b64decode(_str(data["origin"]), validate=True),
            started_wall=float(_num(data["started_wall"])),
            fingerprint=_str(data["fingerprint"]),
            running=running,
            parked=parked,
            parked_at=None if data.get("parked_at") is None else float(_num(data["parked_at"])),
            trace_context=_str_map(data.get("trace") or {}),
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise ParkedCallChangedError(f"the parked call's record cannot be read: {exc}") from exc


def rebuild(stored: StoredParked, projected: ProjectedCall, turn: RouterTurn) -> AwaitingApproval:
    """The parked call again, from its stored state and the re-projected request.

    The element must project to what was parked: otherwise ParkedCallChangedError (nothing
    runs — the user approved that element, not whatever the request projects to now).
    """
    index = stored.running.index
    if fingerprint(projected, index) != stored.fingerprint:
        raise ParkedCallChangedError(
            f"call {projected.call_id}: element {index} no longer projects to the command that "
            "was parked (the rules, the files or the router configuration changed); "
            "nothing ran"
        )
    outcome = projected.outcome
    element = outcome.elements[index] if isinstance(outcome, ShellCall) else None
    parked = replace(stored.parked, subject=replace(stored.parked.subject, element=element))
    # The abort text reports the time since the call started, on whichever router.
    elapsed = max(0.0, time.time() - stored.started_wall)
    call = Call(projected, turn, time.monotonic() - elapsed, stored.started_wall, stored.origin)
    return AwaitingApproval(call, stored.running, parked)


def _finished(d: Mapping[str, Any]) -> Finished:
    return Finished(
        _str(d["text"]), Termination(_str(d["termination"])), _bool(d["success"]),
        _opt_int(d["exit_code"]), _opt_int(d["session_id"]),
        _opt_int(d["original_token_count"]), _bool(d["truncated"]), _strs(d["warnings"]),
    )  # fmt: skip


def _identity(v: object) -> tuple[int, int]:
    if not isinstance(v, list) or len(v) != 2:
        raise TypeError("expected [st_dev, st_ino]")
    return (_int(v[0]), _int(v[1]))


def _obj(v: object) -> Mapping[str, Any]:
    if not isinstance(v, dict):
        raise TypeError("expected an object")
    return v


def _str(v: object) -> str:
    if not isinstance(v, str):
        raise TypeError("expected a string")
    return v


def _bool(v: object) -> bool:
    if not isinstance(v, bool):
        raise TypeError("expected a boolean")
    return v


def _int(v: object) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError("expected an integer")
    return v


def _num(v: object) -> float | int:
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise TypeError("expected a number")
    return v


def _opt_int(v: object) -> int | None:
    return None if v is None else _int(v)


def _str_map(v: object) -> dict[str, str]:
    return {_str(k): _str(x) for k, x in _obj(v).items()}


def _strs(v: object) -> tuple[str, ...]:
    if not isinstance(v, list):
        raise TypeError("expected a list")
    return tuple(_str(x) for x in v)
