"""A unified session's model-visible output is the same whichever replica polls, and when.

Real processes only: three router replicas sharing a real redis-server, one real exec-server
daemon (box1), and a router without Redis (one router) on the same daemon. The daemon keeps
each session's head/tail capture (SessionOutputService), so:

- 3.2 MB written between two polls gives byte-for-byte the same tool output on each of the
  three replicas, on one router and on the embedded local environment (only `Chunk ID` and
  `Wall time` differ, by design);
- two polls of one session racing on two replicas (any mix), repeated 200 times in one
  run, lose, duplicate and reorder nothing;
- a session polled after its process exited, beyond the daemon's exited retention, reports
  its exit code and last output, on the replica that started it and on another.
"""

from __future__ import annotations

import itertools
import random
import re
import threading
import time
from collections.abc import Iterator

import grpc
import pytest
from shellgate.v1 import exec_pb2, exec_pb2_grpc, router_pb2

from tests.integration.replicas import (
    TOKEN,
    Fleet,
    Replica,
    body,
    fleet,
    run,
    start_router_process,
)
from tests.integration.shared_support import REDIS_SERVER
from tests.waiting import eventually

pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")

LINES = 400_000  # "%07d\n": 8 bytes each, 3 200 000 bytes
TOTAL = LINES * 8
BIG = f'import sys\nsys.stdout.write("".join("%07d\\n" % i for i in range({LINES})))'
# The per-response parts that differ by design: a random id and the measured wall time.
_VOLATILE = re.compile(r"^(Chunk ID: [0-9a-f]+|Wall time: [0-9.]+ seconds)$", re.M)




def stable(text: str) -> str:
    """The tool output with its Chunk ID and Wall time lines blanked."""
    return _VOLATILE.sub("-", text)



def running(replica: Replica, thread: str, sid: int) -> bool | None:
    """Whether ListSessions (through `replica`) shows the session running; None if absent."""
    reply = replica.stub.ListSessions(router_pb2.ListSessionsRequest(thread_id=thread), timeout=10)
    return next((s.running for s in reply.sessions if s.session_id == sid), None)


def daemon_processes(the_fleet: Fleet) -> list[exec_pb2.ProcessInfo]:
    """Every process the daemon still keeps for the routers' caller."""
    with grpc.insecure_channel(the_fleet.daemons[0].target) as channel:
        stub = exec_pb2_grpc.ExecServiceStub(channel)
        listed = stub.List(exec_pb2.ListRequest(), timeout=10,
                           metadata=(("authorization", f"Bearer {TOKEN}"),))  # fmt: skip
    return list(listed.processes)


@pytest.fixture(scope="module")
def the_fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    # A short exited retention (1 s instead of 30 s) and sweep: the retention test shows
    # "polled long after the exit" in seconds, against the same rule.
    daemon = "exited_retention_ms = 1000\nsweep_interval_ms = 200\n"
    with fleet(tmp_path_factory.mktemp("output"), routers=3, daemons=1,
               daemon_config=daemon) as running_fleet:  # fmt: skip
        yield running_fleet


@pytest.fixture(scope="module")
def one_router(the_fleet: Fleet) -> Iterator[Replica]:
    """A router without Redis on the fleet's daemon (box1) and its own local environment."""
    folder = the_fleet.folder / "single"
    folder.mkdir()
    config = folder / "router.toml"
    config.write_text("\n".join([
        "local_environment = true", f'local_cwd = "{folder}"',
        "[[environments]]", 'id = "box1"', f'target = "{the_fleet.daemons[0].target}"',
        "insecure = true", f'token_file = "{the_fleet.folder / "router-token"}"',
    ]) + "\n")  # fmt: skip
    replica = start_router_process(config, folder, "single")
    try:
        yield replica
    finally:
        replica.stop()


def _big_poll(poller: Replica, starter: Replica, thread: str, env: str = "box1") -> str:
    """3.2 MB written after the first yield, the whole of it polled once through `poller`."""
    cmd = f"sleep 0.5; python3 -c '{BIG}'"
    first = run(starter, thread, "exec_command", {"cmd": cmd, "yield_time_ms": 250}, "b1", env)
    sid = first.session_id
    assert sid and body(first) == ""
    # Written while no router follows it (the process is over before the poll).
    eventually(lambda: running(starter, thread, sid) is False, "the writer exited", 30, 0.1)
    polled = run(poller, thread, "write_stdin", {"session_id": sid, "yield_time_ms": 5_000}, "b2")
    assert polled.exit_code == 0
    return polled.output_text


def test_3_2_mb_between_polls_reads_the_same_on_every_replica_and_one_router(
    the_fleet: Fleet, one_router: Replica
) -> None:
    r0, r1, r2 = the_fleet.routers
    texts = {
        "one router": _big_poll(one_router, one_router, "big-single"),
        "one router, local environment": _big_poll(one_router, one_router, "big-local", "local"),
        "r0 (started on r0)": _big_poll(r0, r0, "big-0"),
        "r1 (started on r0)": _big_poll(r1, r0, "big-1"),
        "r2 (started on r1)": _big_poll(r2, r1, "big-2"),
    }
    reference = stable(texts["one router"])
    for name, text in texts.items():
        assert stable(text) == reference, f"{name} differs from one router"
    # And it is Codex's text for 3.2 MB: head from line 0, tail to the last line, the middle
    # counted once, every byte in the token count.
    omitted = TOTAL - 1024 * 1024
    assert "Original token count: 800000\n" in reference
    assert reference.count(f"... {omitted} bytes omitted ...") >= 1
    assert "\n0000000\n0000001\n" in reference
    assert reference.endswith(f"{LINES - 2:07d}\n{LINES - 1:07d}\n")
    print(f"\n3.2 MB between polls: {len(texts)} polls, 1 distinct text ({len(reference)} chars), "
          f"{omitted} bytes omitted, 800000 tokens")  # fmt: skip


# A TTY session (echo off, so written chars never come back) printing numbered lines until
# it reads "stop"; then it prints how many it printed and exits.
_PRODUCER = r"""
import sys, termios, threading, time
attrs = termios.tcgetattr(0)
attrs[3] &= ~termios.ECHO
termios.tcsetattr(0, termios.TCSANOW, attrs)
stop = threading.Event()
count = 0
def produce():
    global count
    while not stop.is_set():
        sys.stdout.write("L%06d\n" % count)
        sys.stdout.flush()
        count += 1
        time.sleep(0.003)
worker = threading.Thread(target=produce)
worker.start()
for line in sys.stdin:
    if line.strip() == "stop":
        break
stop.set()
worker.join()
print("END %d" % count, flush=True)
"""
RACES = 200
SESSIONS = 4
_NUMBERED = re.compile(r"L(\d{6})\r?\n")


def _race_session(the_fleet: Fleet, index: int, races: int, out: dict[str, object]) -> None:
    """One session, `races` times two polls at once on two replicas (drawn at random, the
    same one twice included); records every response in the order it completed."""
    routers = the_fleet.routers
    rng = random.Random(index)
    thread = f"race-{index}"
    program = _PRODUCER
    assert "'" not in program
    first = run(routers[index % 3], thread, "exec_command",
                {"cmd": f"python3 -c '{program}'", "tty": True, "yield_time_ms": 250}, "s0")  # fmt: skip
    sid = first.session_id
    assert sid, first.output_text
    received: list[tuple[float, str]] = [(time.monotonic(), body(first))]
    lock = threading.Lock()
    calls = 0

    def poll(replica: Replica, chars: str) -> router_pb2.ExecutionCompleted:
        nonlocal calls
        with lock:
            calls += 1
            call_id = f"p{calls}"
        done = run(replica, thread, "write_stdin",
                   {"session_id": sid, "chars": chars, "yield_time_ms": 250}, call_id)  # fmt: skip
        assert "Output:\n" in done.output_text, f"{thread} {call_id}: {done.output_text}"
        with lock:
            received.append((time.monotonic(), body(done)))
        return done

    failures: list[BaseException] = []

    def racer(replica: Replica) -> None:
        try:
            poll(replica, ".")
        except BaseException as exc:  # reported by the test, not as a thread warning
            failures.append(exc)

    for _ in range(races):
        pair = [rng.choice(routers), rng.choice(routers)]
        workers = [threading.Thread(target=racer, args=(r,)) for r in pair]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(60)
        if failures:
            out[thread] = failures[0]
            return
    done = poll(routers[rng.randrange(3)], "\nstop\n")
    while not done.HasField("exit_code"):
        done = poll(routers[rng.randrange(3)], ".")
    out[thread] = (sorted(received), done.exit_code)


def test_concurrent_polls_on_replicas_race_200_times_without_loss_duplicate_or_reorder(
    the_fleet: Fleet,
) -> None:
    out: dict[str, object] = {}
    started = time.monotonic()
    workers = [
        threading.Thread(target=_race_session, args=(the_fleet, i, RACES // SESSIONS, out))
        for i in range(SESSIONS)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(300)
    assert len(out) == SESSIONS, "a race session did not finish"
    lost = duplicated = reordered = delivered = 0
    for thread, result in sorted(out.items()):
        assert not isinstance(result, BaseException), f"{thread}: {result}"
        received, exit_code = result  # type: ignore[misc]
        assert exit_code == 0, thread
        # What the model read, response after response, as one byte stream.
        stream = "".join(text for _, text in received)
        end = re.search(r"END (\d+)", stream)
        assert end is not None, f"{thread}: no END line"
        produced = int(end[1])
        seen = [int(n) for n in _NUMBERED.findall(stream)]
        delivered += len(seen)
        counts: dict[int, int] = {}
        for n in seen:
            counts[n] = counts.get(n, 0) + 1
        lost += sum(1 for n in range(produced) if n not in counts)
        duplicated += sum(c - 1 for c in counts.values())
        reordered += sum(1 for a, b in itertools.pairwise(seen) if b <= a)
        assert seen[:1] == [0] and stream.rstrip().endswith(f"END {produced}")
    elapsed = time.monotonic() - started
    print(f"\nconcurrent-poll races: {RACES} across 3 replicas ({SESSIONS} sessions), "
          f"{delivered} lines delivered, lost {lost}, duplicated {duplicated}, "
          f"reordered {reordered}, {elapsed:.1f} s")  # fmt: skip
    assert (lost, duplicated, reordered) == (0, 0, 0)


def test_exit_and_last_output_outlive_the_daemon_retention(the_fleet: Fleet) -> None:
    r0, r1 = the_fleet.routers[:2]
    thread = "late-1"
    cmd = "sleep 0.5; echo last words; exit 7"
    sids = [
        run(r0, thread, "exec_command", {"cmd": cmd, "yield_time_ms": 250}, f"x{k}").session_id
        for k in range(2)
    ]
    assert all(sids)
    # A classic command on the same daemon, over at the same time: once the daemon's sweep
    # dropped it, the sessions' processes are past the retention that used to drop them too.
    classic = run(r0, thread, "shell_command", {"command": "sleep 0.5; echo classic"}, "c1")
    assert classic.exit_code == 0
    eventually(lambda: all(running(r0, thread, sid) is False for sid in sids), "exits", 10, 0.1)

    def classic_swept() -> bool:
        return not any("classic" in " ".join(p.argv) for p in daemon_processes(the_fleet))

    eventually(classic_swept, "the classic process past its exited retention", 10, 0.2)
    for replica, sid, call in ((r1, sids[0], "late-r1"), (r0, sids[1], "late-r0")):
        polled = run(replica, thread, "write_stdin",
                     {"session_id": sid, "yield_time_ms": 5_000}, call)  # fmt: skip
        assert polled.exit_code == 7, polled.output_text
        assert "Process exited with code 7" in polled.output_text
        assert body(polled) == "last words\n"
    # Reported, the sessions' entries go like any other closed process's.
    eventually(lambda: not any("last words" in " ".join(p.argv)
                               for p in daemon_processes(the_fleet)),
               "the reported sessions released", 10, 0.2)  # fmt: skip
