"""The in-place Projection builder: cached sub-messages never leak between different values."""

from __future__ import annotations

import json

from shellgate.router.pipeline import HostContext, RouterTurn, project
from shellgate.router.policy import Policy
from shellgate.router.runtime.registry import gather_host_shell_facts
from shellgate.router.service.config import TurnDefaults
from shellgate.router.service.wire.projection import fill_projection, projection_pb
from shellgate.router.service.wire.turn import EnvironmentView, TurnInputs, router_turn
from shellgate.v1 import common_pb2, router_pb2


def _turn(thread: str = "t") -> RouterTurn:
    inputs = TurnInputs(
        defaults=TurnDefaults(),
        environments={"local": EnvironmentView("local", False, "/work", None)},
        host_shell=gather_host_shell_facts(None),
    )
    ctx = common_pb2.TurnContext(
        environments=[common_pb2.TurnEnvironment(environment_id="local", cwd="/work")]
    )
    return router_turn(thread, ctx, inputs)


def _item(arguments: dict[str, object]) -> str:
    return json.dumps(
        {"type": "function_call", "name": "shell_command", "call_id": "c",
         "arguments": json.dumps(arguments)}
    )  # fmt: skip


def _env(host: HostContext, turn: RouterTurn) -> dict[str, str]:
    projection = projection_pb(project(_item({"command": "ls"}), turn, host))
    return dict(projection.shell.elements[0].command.envelope.env)


def test_environment_follows_the_parent_and_thread() -> None:
    turn = _turn()
    first = HostContext(policy=Policy(), parent_env={"PATH": "/bin", "A": "1"})
    second = HostContext(policy=Policy(), parent_env={"PATH": "/bin", "A": "2"})
    assert _env(first, turn)["A"] == "1"
    assert _env(second, turn)["A"] == "2"
    assert _env(first, turn)["A"] == "1"
    assert _env(first, _turn("other"))["CODEX_THREAD_ID"] == "other"
    assert _env(first, turn)["CODEX_THREAD_ID"] == "t"


def test_permissions_follow_the_request() -> None:
    turn, host = _turn(), HostContext(policy=Policy(), parent_env={"PATH": "/bin"})
    plain = projection_pb(project(_item({"command": "ls"}), turn, host))
    escalated = projection_pb(
        project(
            _item({"command": "ls", "sandbox_permissions": "require_escalated",
                   "justification": "why"}), turn, host,
        )
    )  # fmt: skip
    again = projection_pb(project(_item({"command": "ls"}), turn, host))
    envelopes = [p.shell.elements[0].command.envelope for p in (plain, escalated, again)]
    assert [e.requested_permissions.sandbox_permissions for e in envelopes] == [
        common_pb2.SANDBOX_PERMISSIONS_USE_DEFAULT,
        common_pb2.SANDBOX_PERMISSIONS_REQUIRE_ESCALATED,
        common_pb2.SANDBOX_PERMISSIONS_USE_DEFAULT,
    ]
    assert escalated.shell.elements[0].command.envelope.justification == "why"
    assert not again.shell.elements[0].command.envelope.HasField("justification")


def test_fill_in_place_equals_the_built_message() -> None:
    turn, host = _turn(), HostContext(policy=Policy(), parent_env={"PATH": "/bin"})
    projected = project(_item({"command": ["ls -la", "git status"]}), turn, host)
    response = router_pb2.ProjectResponse()
    fill_projection(response.projection, projected)
    assert response.projection == projection_pb(projected)
    assert len(response.projection.shell.elements) == 2


def test_execute_projection_event_equals_the_built_message() -> None:
    from shellgate.router.runtime.events import ProjectionEvent
    from shellgate.router.service.wire.events import event_pb

    turn, host = _turn(), HostContext(policy=Policy(), parent_env={"PATH": "/bin"})
    projected = project(_item({"command": "git status && ls"}), turn, host)
    response = event_pb(ProjectionEvent(projected))
    assert isinstance(response, router_pb2.ExecuteResponse)
    assert response.WhichOneof("event") == "projection"
    assert response.projection == projection_pb(projected)
