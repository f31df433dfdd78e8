"""Handler-stage rules whose spec text was missed (spec 02 §2, §4.1 step 9, §4.3)."""

from __future__ import annotations

from shellgate.router.decode.tool_call import Arguments, ToolError, build_tool_call
from shellgate.router.decode.workdir import join_path, resolve_workdir
from shellgate.router.handler.environments import ReportedShell, TurnEnvironment
from shellgate.router.handler.plan import ExecCommandPlan, Turn, plan_exec_command
from shellgate.router.handler.shells import HostShellFacts

HOST = HostShellFacts(passwd_shell="/bin/bash")


def test_remote_without_reported_shell_rejects_a_shell_assertion() -> None:
    env = TurnEnvironment("bare", "/srv", remote=True)
    out = plan_exec_command(Arguments('{"cmd":"ls","shell":"bash"}'), Turn((env,), host=HOST))
    assert out == ToolError("environment `bare` does not report a shell")


def test_remote_assertion_drops_the_requested_path() -> None:
    env = TurnEnvironment("r1", "/srv", remote=True, shell=ReportedShell("bash", "/bin/bash"))
    plan = plan_exec_command(
        Arguments('{"cmd":"ls","shell":"/usr/bin/bash"}'), Turn((env,), host=HOST)
    )
    assert isinstance(plan, ExecCommandPlan) and plan.command.argv[0] == "/bin/bash"


def test_join_uses_the_base_convention() -> None:
    assert resolve_workdir("/repo", "C:\\x") == "/repo/C:\\x"
    assert join_path("C:\\repo", "\\tmp") == "C:\\tmp"
    assert join_path("C:\\repo", "D:/x/../y") == "D:\\y"
    assert resolve_workdir("/repo", "sub/../sub") == "/repo/sub"


def test_tool_search_numbers_outside_64_bits_are_floats() -> None:
    item = {
        "type": "tool_search_call",
        "call_id": "s",
        "execution": "client",
        "arguments": {"query": "q", "limit": 1 << 70},
    }
    out = build_tool_call(item)
    assert out == ToolError(
        "failed to parse tool_search arguments: invalid type: floating point "
        "`1.1805916207174113e+21`, expected usize"
    )
