"""Shared remote sessions across three router replicas behave like one router.

One fleet (tests/integration/replicas.py): three router processes sharing one real
redis-server, two real exec-server daemons (box1, box2). Concurrent polls through two
replicas neither duplicate nor lose a line (the poll lease); more than the daemon's
retention between polls gives a single router's text (the daemon keeps the session's
head/tail capture); an exit is reported by every replica; a replica SIGKILLed during a
first yield leaves a session the others poll and terminate; EndThread on one replica kills
a session started on another; the daemon owner TTL is renewed while the thread lives and
the thread's expiry kills its processes (short TTLs: seconds).
"""

from __future__ import annotations

import collections
import re
import threading
import time
from collections.abc import Iterator

import grpc
import pytest
from shellgate.router.output.truncation import approx_tokens_from_byte_count
from shellgate.v1 import exec_pb2, exec_pb2_grpc, router_pb2

from tests.integration.replicas import TOKEN, Fleet, Replica, body, fleet, request, run
from tests.integration.shared_support import REDIS_SERVER
from tests.proc_scan import pids_with
from tests.waiting import eventually

pytestmark = pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")

IDLE_TTL_MS = 4_000
SWEEP_MS = 500
LIMITS = f"[limits]\nthread_idle_ttl_ms = {IDLE_TTL_MS}\nsweep_interval_ms = {SWEEP_MS}\n"


@pytest.fixture(scope="module")
def the_fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    with fleet(tmp_path_factory.mktemp("fleet"), routers=3, daemons=2,
               extra_config=LIMITS) as running:  # fmt: skip
        yield running





def sessions(replica: Replica, thread: str) -> list[router_pb2.SessionInfo]:
    """ListSessions through one replica."""
    reply = replica.stub.ListSessions(router_pb2.ListSessionsRequest(thread_id=thread), timeout=10)
    return list(reply.sessions)


def live_on_daemon(the_fleet: Fleet, index: int, argv_marker: str) -> list[exec_pb2.ProcessInfo]:
    """The daemon's processes whose argv contains the marker and that still run."""
    with grpc.insecure_channel(the_fleet.daemons[index].target) as channel:
        stub = exec_pb2_grpc.ExecServiceStub(channel)
        listed = stub.List(exec_pb2.ListRequest(), timeout=10,
                           metadata=(("authorization", f"Bearer {TOKEN}"),))  # fmt: skip
    running = (exec_pb2.PROCESS_STATE_RUNNING, exec_pb2.PROCESS_STATE_AWAITING_INPUT)
    return [p for p in listed.processes
            if argv_marker in " ".join(p.argv) and p.state in running]  # fmt: skip


def numbers(text: str) -> list[int]:
    """The integers printed one per line (tty echo lines are blank)."""
    return [int(line) for line in re.split(r"\r?\n", text) if line.strip().isdigit()]


def test_concurrent_polls_from_two_replicas_neither_duplicate_nor_lose(the_fleet: Fleet) -> None:
    r0, r1, r2 = the_fleet.routers[:3]
    thread, n = "conc-1", 600
    program = (
        f"import time\nfor i in range(1, {n + 1}):\n    print(i, flush=True)\n    time.sleep(0.004)"
    )
    started = run(
        r0,
        thread,
        "exec_command",
        {"cmd": f"python3 -c '{program}'", "tty": True, "yield_time_ms": 250},
        "c0",
    )
    sid = started.session_id
    seen = collections.Counter(numbers(body(started)))
    exits: list[int] = []
    polls = collections.Counter[str]()
    lock = threading.Lock()

    def poller(replica: Replica) -> None:
        deadline = time.monotonic() + 40
        k = 0
        while time.monotonic() < deadline:
            k += 1
            done = run(replica, thread, "write_stdin",
                       {"session_id": sid, "chars": "\n", "yield_time_ms": 250},
                       f"{replica.name}-{k}")  # fmt: skip
            if "Unknown process id" in done.output_text:
                return
            with lock:
                seen.update(numbers(body(done)))
                polls[replica.name] += 1
                if done.HasField("exit_code"):
                    exits.append(done.exit_code)
                    return

    workers = [threading.Thread(target=poller, args=(r,)) for r in (r1, r2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert exits == [0]
    assert sorted(seen) == list(range(1, n + 1))
    assert [k for k, count in seen.items() if count > 1] == []
    # Both replicas really polled while the other did.
    assert polls["r1"] >= 1 and polls["r2"] >= 1


def test_more_than_the_retention_between_polls_reads_like_one_router(
    the_fleet: Fleet,
) -> None:
    r0, r1 = the_fleet.routers[:2]
    thread = "big-1"
    lines = 3 * 1024 * 1024 // 8  # "%07d\n" lines: exactly 3 MiB
    total = lines * 8
    program = f'import sys\nsys.stdout.write("".join("%07d\\n" % i for i in range({lines})))'
    # One router's accounting: the whole output inside a first yield (one Start stream).
    single = run(
        r0,
        thread,
        "exec_command",
        {"cmd": f"python3 -c '{program}'", "yield_time_ms": 10_000},
        "s1",
    )
    assert single.exit_code == 0
    # The same output while no router follows the session: the daemon's replay buffer keeps
    # 1 MiB of it, its session capture the head and the tail.
    started = run(
        r0,
        thread,
        "exec_command",
        {"cmd": f"sleep 1; python3 -c '{program}'", "yield_time_ms": 250},
        "b1",
    )
    sid = started.session_id
    eventually(lambda: [(s.session_id, s.running) for s in sessions(r1, thread)]
               == [(sid, False)], "the writer exited", 30, 0.1)  # fmt: skip
    polled = run(r1, thread, "write_stdin", {"session_id": sid, "yield_time_ms": 5_000}, "b2")
    assert polled.exit_code == 0
    assert polled.original_token_count == single.original_token_count
    assert polled.original_token_count == approx_tokens_from_byte_count(total)
    assert polled.truncated
    # The same text as one router's (the head from line 0 included), up to the per-response
    # chunk id and wall time.
    assert body(polled) == body(single)
    omitted = int(re.search(r"\.\.\. (\d+) bytes omitted \.\.\.", polled.output_text)[1])  # type: ignore[index]
    assert omitted == total - 1024 * 1024
    assert body(polled).count("\n0000000\n") == 1  # the head survives
    assert f"{lines - 1:07d}" in polled.output_text  # and the tail


def test_exit_is_reported_by_every_replica(the_fleet: Fleet) -> None:
    r0, r1, r2 = the_fleet.routers[:3]
    thread = "exit-1"
    sid = run(
        r0,
        thread,
        "exec_command",
        {"cmd": "sleep 0.5; echo done; exit 3", "yield_time_ms": 250},
        "x1",
    ).session_id

    def all_exited() -> bool:
        return all([(s.session_id, s.running, s.exit_code) for s in sessions(r, thread)]
                   == [(sid, False, 3)] for r in (r0, r1, r2))  # fmt: skip

    eventually(all_exited, "the exit seen on every replica", 10, 0.2)
    polled = run(r2, thread, "write_stdin", {"session_id": sid, "yield_time_ms": 5_000}, "x2")
    assert polled.exit_code == 3 and not polled.HasField("session_id")
    assert "Process exited with code 3" in polled.output_text
    assert body(polled) == "done\n"
    assert all(sessions(r, thread) == [] for r in (r0, r1, r2))


def test_replica_killed_mid_first_yield_leaves_a_pollable_session(the_fleet: Fleet) -> None:
    r1, r2 = the_fleet.routers[1:3]
    doomed = the_fleet.start_router("r-doomed")
    thread = "kill-1"
    args = {"cmd": "echo begin; sleep 32.5", "tty": True, "yield_time_ms": 20_000}
    events = doomed.stub.Execute(request(thread, "exec_command", args, "k1", env="box2"), timeout=60)
    sid = None
    for event in events:
        if event.WhichOneof("event") == "started":
            sid = event.started.session_id
            break
    assert sid is not None
    time.sleep(0.3)  # "begin" reached the doomed replica's first yield
    doomed.kill()
    assert [(s.session_id, s.running) for s in sessions(r1, thread)] == [(sid, True)]
    # The dead poll's lease expires; the session replays what no response returned.
    polled = run(r1, thread, "write_stdin",
                 {"session_id": sid, "chars": "\n", "yield_time_ms": 1_000}, "k2")  # fmt: skip
    assert body(polled).startswith("begin\r\n") and polled.session_id == sid
    reply = r2.stub.TerminateSession(
        router_pb2.TerminateSessionRequest(thread_id=thread, session_id=sid), timeout=10
    )
    assert reply.was_running
    eventually(lambda: not live_on_daemon(the_fleet, 1, "sleep 32.5"), "the session gone", 10, 0.2)
    assert sessions(r1, thread) == []


def test_end_thread_on_one_replica_kills_sessions_started_on_another(the_fleet: Fleet) -> None:
    r0, r2 = the_fleet.routers[0], the_fleet.routers[2]
    thread = "end-1"
    run(r0, thread, "exec_command", {"cmd": "sleep 33.5", "yield_time_ms": 250}, "e1", env="box2")
    assert len(live_on_daemon(the_fleet, 1, "sleep 33.5")) == 1
    ended = r2.stub.EndThread(router_pb2.EndThreadRequest(thread_id=thread), timeout=10)
    assert ended.terminated_sessions == 1
    # The orphan detectors: the daemon runs nothing of it, and no such OS process is left.
    eventually(lambda: not live_on_daemon(the_fleet, 1, "sleep 33.5"), "no daemon process", 10, 0.2)
    eventually(lambda: pids_with("sleep\x0033.5") == [], "no OS process", 10, 0.2)


def test_owner_ttl_is_renewed_while_the_thread_lives_and_expiry_kills(the_fleet: Fleet) -> None:
    r0, r1 = the_fleet.routers[:2]
    thread = "ttl-1"
    run(r0, thread, "exec_command", {"cmd": "sleep 34.5", "yield_time_ms": 250}, "t1")
    # The thread stays in use (calls on the local environment: its session is not polled)
    # for well past the daemon owner TTL (idle TTL + sweep = 4.5 s).
    until = time.monotonic() + (IDLE_TTL_MS + SWEEP_MS) / 1000 + 3
    k = 0
    while time.monotonic() < until:
        k += 1
        assert (
            run(r1, thread, "exec_command", {"cmd": "true"}, f"t-{k}", env="local").exit_code == 0
        )
        time.sleep(0.5)
    assert len(live_on_daemon(the_fleet, 0, "sleep 34.5")) == 1
    # Left idle, the thread expires and its process dies with it.
    eventually(lambda: not live_on_daemon(the_fleet, 0, "sleep 34.5"), "the expired session gone",
               (IDLE_TTL_MS + 4 * SWEEP_MS) / 1000 + 5, 0.2)  # fmt: skip
    eventually(lambda: pids_with("sleep\x0034.5") == [], "no OS process", 5, 0.2)
