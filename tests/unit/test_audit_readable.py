"""`shellgate-router audit tail` lines (`cli/audit.readable`): an operator-routed approval's
record names the command it waits on, a checkpoint says what it vouches for."""

from __future__ import annotations

from shellgate.router.cli.audit import readable


def test_an_approval_pending_record_names_its_command() -> None:
    line = readable({
        "time": "t", "seq": 3, "type": "approval_pending", "subject": "bot", "thread": "th",
        "call_id": "c1", "element": 0, "kind": "exec_policy", "command": "printf late",
    })  # fmt: skip
    assert line.endswith("bot th/c1[0] waits for an operator (exec_policy): printf late"), line
    assert "None" not in line


def test_a_checkpoint_record_says_what_it_vouches_for() -> None:
    line = readable({"type": "checkpoint", "seq": 7, "chain": "abc", "time": "t"})
    assert line.endswith("vouches for records up to #7, chain abc") and "None" not in line, line
