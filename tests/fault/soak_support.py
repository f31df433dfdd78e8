"""The callers and the chaos driver of the scaled-mode fault soak (test_scaled_soak.py).

A `Caller` runs one conversation on its own thread: a short command, an approval (parked on
one replica, resumed on another), and a long session on box1 whose output it polls to the
end. Every call goes to a random live replica; a call whose replica died is retried with
the same call id elsewhere (the ledger answers it: its stored result, or UNAVAILABLE
`call_running_elsewhere` when the dead replica held it). What each call ended with, and
each session's bytes, are counted in a `Tally`.
"""

from __future__ import annotations

import collections
import itertools
import random
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import grpc
from shellgate.v1 import common_pb2, router_pb2

from tests.integration.replicas import Fleet, Replica
from tests.router_harness import function_item, turn

__all__ = ["PRODUCER_MARK", "Caller", "SessionBytes", "Tally", "producer"]

# In every long session's command line: what the final process scan looks for.
PRODUCER_MARK = "soakmark"
# Model-visible output is never token-truncated here, so every byte is delivered or counted
# as omitted by the retention (1 MiB head/tail).
BIG = common_pb2.TruncationPolicy(bytes=16_000_000)
MAX_TOKENS = 4_000_000
_NOTE = re.compile(rb"\n\.\.\. (\d+) bytes omitted \.\.\.\n")
_LINE = re.compile(rb"S(\w+) (\d{6}) x{40}\n")
# Tool outputs docs/scaling.md documents for a store outage and an environment that died
# (the call completed; the model reads the error).
DOCUMENTED_TOOL_ERRORS = (
    "tool error:shared thread state unavailable",
    "tool error:environment",
)
# Never documented for a live session: counted as its own kind, so the test shows it.
UNKNOWN_SESSION = "tool error:write_stdin failed: Unknown process id N"
# Retries of one call whose replica died or whose store was down meanwhile.
ATTEMPTS = 8


def producer(tag: str, lines: int, burst: int) -> tuple[str, int]:
    """A bash command printing `lines` numbered lines (a `burst` of bytes mid-way) and
    sleeping between blocks, and how many bytes it prints."""
    burst_cmd = f"head -c {burst} /dev/zero | tr '\\0' y; " if burst else ""
    cmd = (f": {PRODUCER_MARK}; for i in $(seq 1 {lines}); do printf 'S%s %06d %s\\n' {tag} $i "
           f"{'x' * 40}; if [ $((i % 150)) = 0 ]; then sleep 0.3; fi; "
           f"if [ $i = {lines // 2} ]; then {burst_cmd}:; fi; done")  # fmt: skip
    produced = sum(len(f"S{tag} {i:06d} {'x' * 40}\n") for i in range(1, lines + 1)) + burst
    return cmd, produced


@dataclass
class SessionBytes:
    """One long session's accounting."""

    tag: str
    produced: int
    delivered: int = 0
    omitted: int = 0
    polls: int = 0
    exit_code: int | None = None
    ended: str = ""  # "" while polled; "exited", or the documented error that ended it
    # Polls whose replica was SIGKILLed under them (docs/scaling.md: the one window left).
    killed_polls: int = 0
    # How each response began (its header lines), for the report of a session that is off.
    heads: list[str] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)

    def take(self, body: bytes) -> None:
        """Count one response's body (head, omitted note, tail)."""
        self.polls += 1
        note = _NOTE.search(body)
        if note is not None:
            self.omitted += int(note.group(1))
            body = body[: note.start()] + body[note.end():]  # fmt: skip
        self.delivered += len(body)
        self.lines += [int(m.group(2)) for m in _LINE.finditer(body)]

    def order_ok(self) -> bool:
        """Each whole numbered line delivered at most once, in order."""
        return all(a < b for a, b in itertools.pairwise(self.lines))


class Tally:
    """Every call's end and every session's bytes, from all callers (thread-safe)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls = 0
        self.ends: collections.Counter[str] = collections.Counter()
        self.undocumented: list[str] = []
        self.attempts = 0
        self.sessions: list[SessionBytes] = []

    def end(self, kind: str, undocumented: str = "") -> None:
        """Count how one call ended."""
        with self.lock:
            self.calls += 1
            self.ends[kind] += 1
            if undocumented:
                self.undocumented.append(undocumented)


def _body(events: list[router_pb2.ExecuteResponse]) -> bytes:
    text = events[-1].completed.output_text
    return text.split("Output:\n", 1)[1].encode() if "Output:\n" in text else b""


# UNAVAILABLE answers a caller retries: the replica is gone (connection refused/reset),
# the store is down, or another replica runs the call.
def _retryable(exc: grpc.RpcError) -> bool:
    return exc.code() == grpc.StatusCode.UNAVAILABLE


class Caller:
    """One conversation loop against the fleet until `stop` is set."""

    def __init__(self, index: int, fleet: Fleet, tally: Tally, stop: threading.Event,
                 seed: int) -> None:  # fmt: skip
        self.thread = f"soak-{index}"
        self.index = index
        self.fleet = fleet
        self.tally = tally
        self.stop = stop
        self.rng = random.Random(seed)
        self.n = 0
        self.rounds = 0
        self.hit_kill = False

    def pick(self) -> Replica:
        """A random live replica."""
        live = [r for r in self.fleet.routers if r.alive] or self.fleet.routers
        return self.rng.choice(live)

    def call(
        self, make: Callable[[], router_pb2.ExecuteRequest]
    ) -> tuple[str, list[router_pb2.ExecuteResponse]]:
        """One call, retried on another replica with the same call id while UNAVAILABLE;
        ('completed' | 'approval_required' | 'error:<CODE>:<what>', events)."""
        request = make()
        last = ""
        self.hit_kill = False
        for _ in range(ATTEMPTS):
            with self.tally.lock:
                self.tally.attempts += 1
            try:
                events = list(self.pick().stub.Execute(request, timeout=60))
            except grpc.RpcError as exc:
                last = f"error:{exc.code().name}:{_reason(exc)}"
                # Its replica died under it (or another replica held it and died).
                self.hit_kill |= "shared thread state" not in last
                if _retryable(exc):
                    time.sleep(0.3)
                    continue
                return last, []
            terminal = [e.WhichOneof("event") for e in events
                        if e.WhichOneof("event") in ("completed", "approval_required")]  # fmt: skip
            if len(terminal) != 1 or events[-1].WhichOneof("event") != terminal[0]:
                return f"undocumented:{terminal}", events
            text = events[-1].completed.output_text if terminal[0] == "completed" else ""
            if terminal[0] == "completed" and "Output:\n" not in text:
                # A completed tool error (the store was down, say): the model's answer.
                return "tool error:" + _words(text), events
            return terminal[0], events
        return last, []

    def _request(self, name: str, args: dict[str, object], env: str) -> router_pb2.ExecuteRequest:
        self.n += 1
        full = {"login": False, **args} if name != "write_stdin" else args
        return router_pb2.ExecuteRequest(
            thread_id=self.thread,
            turn=turn(environment_id=env, truncation_policy=BIG),
            item=function_item(name, full, f"{self.thread}-c{self.n}"),
        )

    def _record(self, kind: str, ok: tuple[str, ...]) -> None:
        documented = kind in ok or kind.startswith("error:UNAVAILABLE") or kind.startswith(
            "error:NOT_FOUND")
        self.tally.end(kind, "" if documented else kind)

    def run(self) -> None:
        """Conversations until stopped."""
        while not self.stop.is_set():
            self.rounds += 1
            self.short()
            self.approval()
            self.session()

    def short(self) -> None:
        """`echo` on a random daemon (remote environments serve unified exec)."""
        env = self.rng.choice(["box1", "box2"])
        req = self._request("exec_command", {"cmd": f"echo short-{self.n}",
                                             "yield_time_ms": 5_000}, env)  # fmt: skip
        kind, _ = self.call(lambda: req)
        self._record(kind, ("completed", *DOCUMENTED_TOOL_ERRORS))

    def approval(self) -> None:
        """A prompted `touch`, approved through a random replica."""
        req = self._request("exec_command", {"cmd": f"touch mark-{self.index}"}, "box1")
        kind, events = self.call(lambda: req)
        self._record(kind, ("approval_required", "completed", *DOCUMENTED_TOOL_ERRORS))
        if kind != "approval_required":
            return
        resume = router_pb2.ExecuteRequest(
            thread_id=self.thread,
            resume=router_pb2.ResumeCall(
                approval_id=events[-1].approval_required.approval_id,
                decision=router_pb2.APPROVAL_DECISION_APPROVED,
            ),
        )
        kind, _ = self.call(lambda: resume)
        self._record(kind, ("completed", *DOCUMENTED_TOOL_ERRORS))

    def session(self) -> None:
        """A long session on box1 polled to its exit; its bytes counted."""
        tag = f"{self.index}r{self.rounds}"
        cmd, produced = producer(tag, 1_500, 1_500_000 if self.rounds % 2 else 0)
        start = self._request("exec_command", {"cmd": cmd, "yield_time_ms": 300,
                                               "max_output_tokens": MAX_TOKENS}, "box1")  # fmt: skip
        kind, events = self.call(lambda: start)
        self._record(kind, ("completed", *DOCUMENTED_TOOL_ERRORS))
        if kind != "completed":
            return  # never started (documented error): no bytes to account for
        acct = SessionBytes(tag, produced)
        with self.tally.lock:
            self.tally.sessions.append(acct)
        acct.take(_body(events))
        done = events[-1].completed
        sid = done.session_id if done.HasField("session_id") else 0
        for _ in range(200):
            if not sid:
                acct.exit_code, acct.ended = done.exit_code, "exited"
                return
            poll = self._request("write_stdin", {"session_id": sid, "chars": "",
                                                 "yield_time_ms": 700,
                                                 "max_output_tokens": MAX_TOKENS}, "box1")  # fmt: skip
            kind, events = self.call(lambda p=poll: p)  # type: ignore[misc]
            self._record(kind, ("completed", *DOCUMENTED_TOOL_ERRORS))
            acct.killed_polls += self.hit_kill
            if kind != "completed":
                continue  # a poll that got no answer: the next one gets its bytes
            acct.take(_body(events))
            acct.heads.append(events[-1].completed.output_text.split("Output:", 1)[0][-160:])
            done = events[-1].completed
            sid = done.session_id if done.HasField("session_id") else 0
        acct.ended = "polls exhausted"


def _words(text: str) -> str:
    if re.match(r"write_stdin failed: Unknown process id \d+", text):
        return UNKNOWN_SESSION.split(":", 1)[1]
    for known in DOCUMENTED_TOOL_ERRORS:
        if known.split(":", 1)[1] in text:
            return known.split(":", 1)[1]
    return text[:120]


def _reason(exc: grpc.RpcError) -> str:
    details = str(exc.details() or "")
    for word in ("running on another router replica", "shared thread state unavailable",
                 "unknown thread", "Connection refused", "Socket closed", "connect"):  # fmt: skip
        if word in details:
            return word
    return details[:60]
