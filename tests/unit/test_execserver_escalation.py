"""Kill escalation (TERM → grace → KILL → gone) on an injected clock, and the denial scanner."""

from __future__ import annotations

import asyncio
import signal
import time

from shellgate.common.process.base import ExitStatus, Stream
from shellgate.common.process.procgroup import kill_group
from shellgate.execserver.denial import DenialScanner


class FakeGroup:
    """A process group whose members react to signals after fake delays."""

    def __init__(self, dies_on_term_after: float | None, dies_on_kill: bool = True) -> None:
        self.now = 0.0
        self.sent: list[tuple[float, int]] = []
        self.alive = True
        self._term_after = dies_on_term_after
        self._dies_on_kill = dies_on_kill
        self._term_at: float | None = None

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds  # no real waiting

    def members(self, _pgid: int) -> list[int]:
        term_at, after = self._term_at, self._term_after
        if term_at is not None and after is not None and self.now - term_at >= after:
            self.alive = False
        return [4242] if self.alive else []

    def send(self, _pgid: int, signo: int) -> bool:
        self.sent.append((self.now, signo))
        if signo == signal.SIGTERM:
            self._term_at = self.now
        if signo == signal.SIGKILL and self._dies_on_kill:
            self.alive = False
        return True


def escalate(group: FakeGroup, grace_ms: int = 2_000, gone_ms: int = 5_000) -> bool:
    async def main() -> bool:
        return await kill_group(
            7, grace_ms, gone_ms,
            clock=group.clock, sleep=group.sleep, members=group.members, send=group.send,
        )

    started = time.monotonic()
    result = asyncio.run(main())
    assert time.monotonic() - started < 1.0  # fake time only
    return result


def test_group_that_obeys_term_gets_no_kill() -> None:
    group = FakeGroup(dies_on_term_after=0.5)
    assert escalate(group)
    assert [s for _, s in group.sent] == [signal.SIGTERM]
    assert 0.5 <= group.now < 2.0


def test_group_that_ignores_term_is_killed_after_the_grace_period() -> None:
    group = FakeGroup(dies_on_term_after=None)
    assert escalate(group, grace_ms=2_000)
    assert [s for _, s in group.sent] == [signal.SIGTERM, signal.SIGKILL]
    kill_at = group.sent[1][0]
    assert 2.0 <= kill_at < 2.1


def test_group_that_survives_kill_reports_failure_after_the_gone_timeout() -> None:
    group = FakeGroup(dies_on_term_after=None, dies_on_kill=False)
    assert not escalate(group, grace_ms=1_000, gone_ms=3_000)
    assert 4.0 <= group.now < 4.1


def test_empty_group_is_not_signalled() -> None:
    group = FakeGroup(dies_on_term_after=0.0)
    group.alive = False
    assert escalate(group)
    assert group.sent == []


def test_denial_scanner_finds_split_markers_and_the_seam() -> None:
    failed = ExitStatus(code=1)
    scanner = DenialScanner()
    scanner.feed(Stream.STDOUT, b"Read-only file sys")
    scanner.feed(Stream.STDOUT, b"TEM\n")
    assert scanner.denied(failed, timed_out=False, sandboxed=True)
    assert not scanner.denied(failed, timed_out=False, sandboxed=False)
    assert not scanner.denied(failed, timed_out=True, sandboxed=True)
    assert not scanner.denied(ExitStatus(code=0), timed_out=False, sandboxed=True)
    seam = DenialScanner()  # stdout ends "sand", stderr starts "box": the aggregate has it
    seam.feed(Stream.STDOUT, b"sand")
    seam.feed(Stream.STDERR, b"box")
    assert seam.denied(failed, timed_out=False, sandboxed=True)
    quiet = DenialScanner()
    quiet.feed(Stream.STDERR, b"nothing to see")
    assert not quiet.denied(ExitStatus(code=127), timed_out=False, sandboxed=True)
    assert quiet.denied(ExitStatus(signal=31), timed_out=False, sandboxed=True)  # SIGSYS
