"""`ProjectionMemo`: what projections reuse never changes what they produce, byte for byte.

The memo keeps environments (projection A) and the wire projection's pre-built sub-messages
between calls. Every property here projects the same calls twice — once through one shared,
long-lived memo, once with nothing kept (a fresh memo per call and no memo on the wire) —
and requires identical messages and identical serialized bytes.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import threading
from collections.abc import Sequence

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shellgate.router.envelope import site_environment
from shellgate.router.pipeline import HostContext, RouterTurn, project
from shellgate.router.policy import Policy
from shellgate.router.projection import CommandElement, ProjectionMemo, ShellCall
from shellgate.router.runtime.call.events import ProjectionEvent
from shellgate.router.runtime.environments.registry import gather_host_shell_facts
from shellgate.router.service.config import TurnDefaults
from shellgate.router.service.wire.events import event_pb
from shellgate.router.service.wire.projection import fill_projection, projection_pb
from shellgate.router.service.wire.turn import EnvironmentView, TurnInputs, router_turn
from shellgate.v1 import common_pb2, router_pb2

PARENTS = (
    {"PATH": "/bin", "A": "1"},
    {"PATH": "/bin", "A": "2"},
    {"PATH": "/usr/bin:/bin", "HOME": "/h", "TERM": "xterm", "GITHUB_TOKEN": "t"},
)


def _turn(thread: str = "t", *, permissions: bool = False, profile: str = "") -> RouterTurn:
    # Turns of other threads and profiles share the base turn's env policy object, as the
    # turns of one router often do: the memo must still tell them apart.
    base = _base_turn(permissions)
    return dataclasses.replace(base, thread_id=thread, active_profile_id=profile or None)


@functools.cache
def _base_turn(permissions: bool) -> RouterTurn:
    inputs = TurnInputs(
        defaults=TurnDefaults(),
        environments={"local": EnvironmentView("local", False, "/work", None)},
        host_shell=gather_host_shell_facts(None),
    )
    ctx = common_pb2.TurnContext(
        environments=[common_pb2.TurnEnvironment(environment_id="local", cwd="/work")],
        features=common_pb2.FeatureSwitches(exec_permission_approvals=permissions),
    )
    return router_turn("t", ctx, inputs)


def _item(tool: str, arguments: dict[str, object]) -> str:
    return json.dumps(
        {"type": "function_call", "name": tool, "call_id": "c", "arguments": json.dumps(arguments)}
    )


def _env(host: HostContext, turn: RouterTurn) -> dict[str, str]:
    projection = projection_pb(project(_item("shell_command", {"command": "ls"}), turn, host))
    return dict(projection.shell.elements[0].command.envelope.env)


def test_environment_follows_the_parent_and_thread() -> None:
    turn, memo = _turn(), ProjectionMemo()
    first = HostContext(policy=Policy(), parent_env=PARENTS[0], memo=memo)
    second = HostContext(policy=Policy(), parent_env=PARENTS[1], memo=memo)
    assert _env(first, turn)["A"] == "1"
    assert _env(second, turn)["A"] == "2"
    assert _env(first, turn)["A"] == "1"
    assert _env(first, _turn("other"))["CODEX_THREAD_ID"] == "other"
    assert _env(first, turn)["CODEX_THREAD_ID"] == "t"


def test_permissions_follow_the_request() -> None:
    turn, host = _turn(), HostContext(policy=Policy(), parent_env={"PATH": "/bin"})
    escalate = {"command": "ls", "sandbox_permissions": "require_escalated", "justification": "w"}
    calls = [{"command": "ls"}, escalate, {"command": "ls"}]
    projections = [projection_pb(project(_item("shell_command", c), turn, host)) for c in calls]
    envelopes = [p.shell.elements[0].command.envelope for p in projections]
    assert [e.requested_permissions.sandbox_permissions for e in envelopes] == [
        common_pb2.SANDBOX_PERMISSIONS_USE_DEFAULT,
        common_pb2.SANDBOX_PERMISSIONS_REQUIRE_ESCALATED,
        common_pb2.SANDBOX_PERMISSIONS_USE_DEFAULT,
    ]
    assert envelopes[1].justification == "w" and not envelopes[2].HasField("justification")


def test_fill_in_place_equals_the_built_message() -> None:
    turn, host = _turn(), HostContext(policy=Policy(), parent_env={"PATH": "/bin"})
    projected = project(_item("shell_command", {"command": ["ls -la", "git status"]}), turn, host)
    response = router_pb2.ProjectResponse()
    fill_projection(response.projection, projected, host.memo)
    assert response.projection == projection_pb(projected)
    assert len(response.projection.shell.elements) == 2


def test_execute_projection_event_equals_the_built_message() -> None:
    turn, host = _turn(), HostContext(policy=Policy(), parent_env={"PATH": "/bin"})
    projected = project(_item("shell_command", {"command": "git status && ls"}), turn, host)
    response = event_pb(ProjectionEvent(projected), host.memo)
    assert isinstance(response, router_pb2.ExecuteResponse)
    assert response.WhichOneof("event") == "projection"
    assert response.projection == projection_pb(projected)


# --- the property: a shared memo changes nothing --------------------------------------
_paths = st.sampled_from(["/work/a", "rel/b", "/tmp/ü", "c"])
_entries = st.lists(
    st.fixed_dictionaries({"path": _paths, "access": st.sampled_from(["read", "write", "none"])}),
    max_size=3,
)
_file_system = st.one_of(
    st.fixed_dictionaries({"read": st.lists(_paths, max_size=2)}),
    st.fixed_dictionaries(
        {"entries": _entries},
        optional={"glob_scan_max_depth": st.integers(min_value=0, max_value=9)},
    ),
)
_additional = st.fixed_dictionaries(
    {},
    optional={
        "network": st.fixed_dictionaries({"enabled": st.booleans()}),
        "file_system": _file_system,
    },
)
_arguments = st.fixed_dictionaries(
    {"command": st.sampled_from(["ls", "git status && ls", "echo 'a b' | wc -c"])},
    optional={
        "sandbox_permissions": st.sampled_from(
            ["use_default", "require_escalated", "with_additional_permissions"]
        ),
        "additional_permissions": _additional,
        "justification": st.just("why"),
        "tty": st.booleans(),
        "workdir": st.sampled_from(["sub", "/elsewhere"]),
    },
)
_call = st.tuples(
    st.sampled_from(["shell_command", "exec_command"]),
    _arguments,
    st.integers(min_value=0, max_value=len(PARENTS) - 1),
    st.sampled_from(["t", "other"]),
    st.sampled_from(["", "dev"]),
    st.booleans(),
)


def _item_for(tool: str, arguments: dict[str, object]) -> str:
    if tool == "exec_command":
        arguments = {("cmd" if k == "command" else k): v for k, v in arguments.items()}
    return _item(tool, arguments)


def _serialized(message: router_pb2.ProjectResponse) -> tuple[bytes, bytes]:
    return message.SerializeToString(), message.SerializeToString(deterministic=True)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_call, min_size=1, max_size=8))
def test_a_shared_memo_projects_byte_for_byte_like_none(
    calls: Sequence[tuple[str, dict[str, object], int, str, str, bool]],
) -> None:
    memo = ProjectionMemo(environments=2, messages=2)  # small: evictions happen too
    hosts = [HostContext(policy=Policy(), parent_env=p, memo=memo) for p in PARENTS]
    for tool, arguments, parent, thread, profile, permissions in calls:
        turn = _turn(thread, permissions=permissions, profile=profile)
        item = _item_for(tool, arguments)
        kept = project(item, turn, hosts[parent])
        fresh = project(item, turn, HostContext(policy=Policy(), parent_env=PARENTS[parent]))
        assert kept == fresh
        with_memo, without = router_pb2.ProjectResponse(), router_pb2.ProjectResponse()
        fill_projection(with_memo.projection, kept, memo)
        fill_projection(without.projection, fresh, None)
        assert with_memo == without
        assert _serialized(with_memo) == _serialized(without)
        if isinstance(kept.outcome, ShellCall):
            for element in kept.outcome.elements:
                assert isinstance(element, CommandElement)
                site_env = element.envelope.env
                assert site_env == fresh.outcome.elements[element.handler.index].envelope.env


def test_environment_memo_equals_computing_afresh() -> None:
    """`ProjectionMemo.environment` answers what `envelope.site_environment` computes."""
    from shellgate.common.env_policy import ShellEnvironmentPolicy
    from shellgate.router.envelope import CommandSite

    memo = ProjectionMemo(environments=1)
    policies = (ShellEnvironmentPolicy(), ShellEnvironmentPolicy.build(set_vars={"X": "1"}))
    parents = [tuple(p.items()) for p in PARENTS]
    for _round in range(2):
        for parent in parents:
            for policy in policies:
                for unified in (False, True):
                    for profile in (None, "dev"):
                        site = CommandSite(
                            argv=["ls"], shell_type=None, environment_id="local",
                            remote=False, cwd="/w", sandbox_cwd="/w", parent_env=parent,
                            env_policy=policy, thread_id="t", active_profile=profile,
                        )  # fmt: skip
                        assert memo.environment(site, unified) == site_environment(site, unified)


# --- the memo itself: bounded, keyed by value, shared safely ----------------------------
def test_messages_are_kept_per_builder_and_bounded() -> None:
    memo = ProjectionMemo(messages=2)
    built: list[tuple[str, object]] = []

    def first(key: object) -> list[object]:
        built.append(("first", key))
        return ["first", key]

    def second(key: object) -> list[object]:
        built.append(("second", key))
        return ["second", key]

    a1, a2 = memo.message(first, "a"), memo.message(first, "a")
    assert a1 is a2 and built == [("first", "a")]
    # Another builder never sees the first one's values for an equal key.
    assert memo.message(second, "a") == ["second", "a"]
    # Equal (not identical) keys hit the kept value; a third key evicts the least recent.
    assert memo.message(first, ("k", 1)) is memo.message(first, ("k", 1))
    memo.message(first, "b")
    built.clear()
    memo.message(first, "a")
    assert built == [("first", "a")]


def test_one_memo_shared_by_threads_projects_like_one_thread() -> None:
    """The router shares its memo between the event loop and worker threads."""
    memo = ProjectionMemo(environments=2, messages=2)
    hosts = [HostContext(policy=Policy(), parent_env=p, memo=memo) for p in PARENTS]
    turns = [_turn("t"), _turn("other", profile="dev")]
    items = [
        _item("shell_command", {"command": "ls"}),
        _item("exec_command", {"cmd": "git status", "tty": True}),
        _item("shell_command", {"command": ["a", "b"], "sandbox_permissions": "use_default"}),
    ]
    jobs = [(i, t, h) for i in range(len(items)) for t in range(2) for h in range(len(hosts))]

    def result(i: int, t: int, h: int, m: ProjectionMemo | None) -> bytes:
        out = router_pb2.ProjectResponse()
        fill_projection(out.projection, project(items[i], turns[t], hosts[h]), m)
        return out.SerializeToString(deterministic=True)

    expected = {job: result(*job, None) for job in jobs}
    failures: list[str] = []

    def worker(offset: int) -> None:
        for n in range(60):
            job = jobs[(n + offset) % len(jobs)]
            if result(*job, memo) != expected[job]:
                failures.append(f"{job}")

    threads = [threading.Thread(target=worker, args=(k * 5,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)
    assert failures == []
