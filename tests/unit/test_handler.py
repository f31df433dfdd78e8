"""Handler stage: environments, workdir, login, shells, remote/zsh-fork, permissions, tools."""

from __future__ import annotations

import json

from shellgate.router.decode.tool_call import Arguments, PayloadKind, ToolCall, ToolError, ToolName
from shellgate.router.decode.tools import (
    EnvironmentRef,
    Features,
    ToolsConfig,
    UnifiedExecShellMode,
    list_tools,
)
from shellgate.router.decode.workdir import resolve_workdir
from shellgate.router.handler.environments import ReportedShell, TurnEnvironment
from shellgate.router.handler.permissions import Grants, PermissionProfile
from shellgate.router.handler.plan import (
    ExecCommandPlan,
    ShellCommandPlan,
    Turn,
    WriteStdinPlan,
    plan_exec_command,
    plan_shell_command,
    plan_tool_call,
    plan_write_stdin,
)
from shellgate.router.handler.shells import HostShellFacts, ShellType, shell_by_model_provided_path
from shellgate.router.policy.approval_policy import ApprovalMode, ApprovalPolicy

# The observed Debian host: passwd /bin/bash, PATH lists /usr/bin before /bin.
HOST = HostShellFacts(
    passwd_shell="/bin/bash",
    which={"bash": "/usr/bin/bash", "sh": "/usr/bin/sh"},
    existing=frozenset({"/bin/bash", "/usr/bin/bash", "/bin/sh", "/usr/bin/sh"}),
)
LOCAL = TurnEnvironment("local", "/repo")
REMOTE = TurnEnvironment("gpu", "/srv", remote=True, shell=ReportedShell("bash", "/bin/bash"))
TURN = Turn(environments=(LOCAL, REMOTE), host=HOST)


def test_shell_command_single_and_batch() -> None:
    plan = plan_shell_command(
        Arguments('{"command":"echo hi","workdir":"sub/../sub"}'), Turn((LOCAL,), host=HOST)
    )
    assert isinstance(plan, ShellCommandPlan)
    assert plan.commands[0].argv == ("/bin/bash", "-lc", "echo hi")
    assert plan.commands[0].cwd == "/repo/sub"
    assert plan.timeout_ms == 10_000
    batch = plan_shell_command(
        Arguments('{"command":["a","b"],"login":false}'), Turn((LOCAL,), host=HOST)
    )
    assert isinstance(batch, ShellCommandPlan) and batch.is_batch
    assert [c.argv for c in batch.commands] == [("/bin/bash", "-c", "a"), ("/bin/bash", "-c", "b")]


def test_shell_command_without_environment() -> None:
    assert plan_shell_command(Arguments('{"command":"x"}'), Turn(())) == ToolError(
        "shell is unavailable in this session"
    )


def test_exec_command_unknown_environment_wins_over_later_errors() -> None:
    out = plan_exec_command(
        Arguments('{"cmd":"echo a","environment_id":"bogus","workdir":7}'), TURN
    )
    assert out == ToolError("unknown turn environment id `bogus`")


def test_exec_command_remote_runs_reported_shell() -> None:
    plan = plan_exec_command(
        Arguments('{"cmd":"ls","environment_id":"gpu","shell":"/usr/bin/bash"}'), TURN
    )
    assert isinstance(plan, ExecCommandPlan)
    assert plan.command.argv == ("/bin/bash", "-lc", "ls")
    assert plan.command.remote and plan.command.sandbox_cwd == "/srv"
    wrong = plan_exec_command(Arguments('{"cmd":"ls","environment_id":"gpu","shell":"zsh"}'), TURN)
    assert wrong == ToolError("environment `gpu` only supports `bash`")


def test_remote_without_shell_never_falls_back() -> None:
    env = TurnEnvironment("bare", "/", remote=True)
    out = plan_exec_command(Arguments('{"cmd":"ls"}'), Turn((env,), host=HOST))
    assert out == ToolError("environment `bare` does not report a shell")


def test_model_provided_shell_selects_type_only() -> None:
    assert shell_by_model_provided_path("/usr/local/bin/bash", HOST).path == "/bin/bash"
    assert shell_by_model_provided_path("sh", HOST).path == "/usr/bin/sh"
    fallback = shell_by_model_provided_path("fish", HOST)
    assert (fallback.type, fallback.path) == (ShellType.SH, "/bin/sh")
    plan = plan_exec_command(Arguments('{"cmd":"ls","shell":"/bin/dash","login":false}'), TURN)
    assert isinstance(plan, ExecCommandPlan) and plan.command.argv == ("/bin/sh", "-c", "ls")


def test_login_disallowed() -> None:
    env = TurnEnvironment("local", "/repo", allow_login_shell=False)
    turn = Turn((env,), host=HOST)
    text = "login shell is disabled by config; omit `login` or set it to false."
    assert plan_exec_command(Arguments('{"cmd":"ls","login":true}'), turn) == ToolError(text)
    plan = plan_exec_command(Arguments('{"cmd":"ls"}'), turn)
    assert isinstance(plan, ExecCommandPlan) and plan.command.argv[1] == "-c"


def test_zsh_fork_rejects_shell() -> None:
    turn = Turn((LOCAL,), host=HOST, unified_exec_shell_mode=UnifiedExecShellMode.ZSH_FORK,
                shell_zsh_path="/opt/zsh")  # fmt: skip
    assert isinstance(plan_exec_command(Arguments('{"cmd":"ls","shell":"bash"}'), turn), ToolError)
    plan = plan_exec_command(Arguments('{"cmd":"ls"}'), turn)
    assert isinstance(plan, ExecCommandPlan) and plan.command.argv == ("/opt/zsh", "-lc", "ls")


def test_approval_guard_texts() -> None:
    never = Turn((LOCAL,), host=HOST, approval_policy=ApprovalPolicy(ApprovalMode.NEVER))
    escalate = '{"%s":"ls","sandbox_permissions":"require_escalated"}'
    assert plan_exec_command(Arguments(escalate % "cmd"), never) == ToolError(
        "approval policy is Never; reject command — you cannot ask for escalated permissions if "
        "the approval policy is Never"
    )
    out = plan_shell_command(Arguments(escalate % "command"), never)
    assert isinstance(out, ToolError) and "you should not ask" in out.text


def test_additional_permissions_disabled_then_preapproved_by_grant() -> None:
    text = '{"cmd":"ls","sandbox_permissions":"with_additional_permissions",' \
        '"additional_permissions":{"network":{"enabled":true}}}'  # fmt: skip
    out = plan_exec_command(Arguments(text), Turn((LOCAL,), host=HOST))
    assert isinstance(out, ToolError) and out.text.startswith("additional permissions are disabled")
    granted = Turn(
        (LOCAL,), host=HOST,
        features=Features(request_permissions_tool=True),
        approval_policy=ApprovalPolicy(ApprovalMode.GRANULAR),
        grants=Grants(session=PermissionProfile(network_enabled=True)),
    )  # fmt: skip
    plan = plan_exec_command(Arguments(text), granted)
    assert isinstance(plan, ExecCommandPlan) and plan.permissions.preapproved


def test_write_stdin_lookup_between_passes() -> None:
    assert plan_write_stdin(Arguments('{"session_id":5,"chars":7}'), lambda _i: False) == ToolError(
        "write_stdin failed: Unknown process id 5"
    )
    assert isinstance(
        plan_write_stdin(Arguments('{"session_id":5}'), lambda _i: True), WriteStdinPlan
    )


def test_plan_tool_call_dispatch() -> None:
    call = ToolCall(ToolName("mcp__foo", "exec_command"), "c", PayloadKind.FUNCTION, arguments="{}")
    assert plan_tool_call(call, TURN, {"exec_command"}) == ToolError(
        "unsupported call: mcp__fooexec_command"
    )


def test_resolve_workdir() -> None:
    assert resolve_workdir("/repo", None) == "/repo"
    assert resolve_workdir("/repo", "/tmp") == "/tmp"
    assert resolve_workdir("C:\\work", "sub") == "C:\\work\\sub"


def test_list_tools_default_and_multi_environment() -> None:
    tools = list_tools(ToolsConfig())
    assert [t["name"] for t in tools] == ["exec_command", "write_stdin", "apply_patch"]
    assert list(tools[0]) == ["type", "name", "description", "strict", "parameters"]
    assert list(tools[0]["parameters"]["properties"]) == [
        "cmd", "justification", "login", "max_output_tokens", "prefix_rule",
        "sandbox_permissions", "shell", "tty", "workdir", "yield_time_ms",
    ]  # fmt: skip
    multi = list_tools(ToolsConfig(environments=(EnvironmentRef("local", False),
                                                 EnvironmentRef("gpu", True))))  # fmt: skip
    assert "environment_id" in multi[0]["parameters"]["properties"]
    classic = list_tools(ToolsConfig(features=Features(unified_exec=False)))
    assert classic[0]["name"] == "shell_command"
    assert json.loads(json.dumps(classic[0]))["parameters"]["required"] == ["command"]
