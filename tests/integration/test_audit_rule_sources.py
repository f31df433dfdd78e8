"""Audit records and projections name the file:line of every matched rule (issue 19)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from shellgate.router.runtime.call.events import Termination
from shellgate.router.service.audit_log import AuditLog
from shellgate.v1 import router_pb2

from tests.integration.runtime_support import Harness, completed
from tests.router_harness import function_item, router_config, running_router, turn

# The forbidding rule is on line 3 (not line 1), the prompting one on line 5.
RULES = (
    "# house rules\n"
    "\n"
    'prefix_rule(pattern=["rm", ["-rf", "-r"]], decision="forbidden")\n'
    "\n"
    'prefix_rule(\n    pattern=["touch"],\n    decision="prompt",\n)\n'
)


def _decisions(path: Path, call_id: str) -> list[dict[str, Any]]:
    records = [json.loads(line) for line in path.read_text().splitlines()]
    return [r for r in records if r.get("call_id") == call_id and r["type"] == "decision"]


def test_forbidden_call_names_the_rule_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    log = AuditLog(str(path), fsync="always")
    rules_file = tmp_path / "rules" / "base.rules"
    default_rules = tmp_path / "rules" / "default.rules"

    async def main() -> None:
        (tmp_path / "rules").mkdir()
        default_rules.write_text("# approved by users\n")
        async with Harness(tmp_path, approval="never", rules=RULES) as h:
            h.ctx.audit = log
            done = completed(
                await h.run("shell_command", {"command": "echo hi && rm -rf keep"}, "forbid")
            )
            assert done.termination is Termination.FORBIDDEN
            # An amendment appended at run time lands on line 2 of default.rules.
            assert h.store.append_prefix_rule(["git", "status"]).ok
            await h.run("shell_command", {"command": "git status"}, "amended")
            # Shared (Redis) amendments have no file: `<shared>` and their list index.
            h.store.set_shared_prefix_rules([("ls", "-l"), ("uname",)])
            await h.run("shell_command", {"command": "uname"}, "shared")

    asyncio.run(main())
    log.close()
    (forbid,) = _decisions(path, "forbid")
    assert forbid["decision"] == "forbidden"
    assert forbid["segments"] == [["echo", "hi"], ["rm", "-rf", "keep"]]
    by_segment = {m["segment"]: m for m in forbid["matched_rules"]}
    assert by_segment[0]["type"] == "heuristicsRuleMatch" and "file" not in by_segment[0]
    assert by_segment[1] == {
        "type": "prefixRuleMatch",
        "matchedPrefix": ["rm", "-rf"],
        "decision": "forbidden",
        "segment": 1,
        "pattern": ["rm", ["-rf", "-r"]],
        "file": str(rules_file),
        "line": 3,
    }
    # The deny-side scan finds the same rule outside the segments: no segment, same source.
    scans = [m for m in forbid["matched_rules"] if m["segment"] is None]
    assert scans and all((m["file"], m["line"]) == (str(rules_file), 3) for m in scans)
    (amended,) = _decisions(path, "amended")
    (rule,) = amended["matched_rules"]
    assert (rule["file"], rule["line"], rule["pattern"]) == (
        str(default_rules), 2, ["git", "status"],
    )  # fmt: skip
    (shared,) = _decisions(path, "shared")
    (rule,) = shared["matched_rules"]
    assert (rule["file"], rule["line"], rule["decision"]) == ("<shared>", 1, "allow")


def test_projection_matches_carry_the_rule_source(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "base.rules").write_text(RULES)
    config = router_config(rules_dirs=(str(rules),), local_cwd=str(tmp_path))
    with running_router(config) as router:
        request = router_pb2.ProjectRequest(
            thread_id="t", turn=turn(), item=function_item("shell_command", {"command": "touch a"})
        )
        command = router.stub.Project(request, timeout=10).projection.shell.elements[0].command
    (match,) = command.policy.segment_matches
    assert match.prefix_rule_match.source == f"{rules / 'base.rules'}:5"
