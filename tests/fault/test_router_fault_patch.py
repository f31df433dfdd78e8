"""apply_patch through the router when the filesystem refuses: a file where a directory
must go, and a file-size limit (RLIMIT_FSIZE, standing in for a full disk). The call is
paired with a model-facing error and nothing is left half-written."""

from __future__ import annotations

import json
import resource
from pathlib import Path

import grpc
from shellgate.v1 import common_pb2, router_pb2, router_pb2_grpc

from tests.router_harness import completed, execute, router_subprocess, running_router, turn

LIMIT = 64 * 1024


def _patch_item(patch: str, call_id: str = "p1") -> common_pb2.ToolCallItem:
    raw = {"type": "custom_tool_call", "name": "apply_patch", "input": patch, "call_id": call_id}
    return common_pb2.ToolCallItem(raw_json=json.dumps(raw))


def _request(patch: str, cwd: Path, call_id: str = "p1") -> router_pb2.ExecuteRequest:
    return router_pb2.ExecuteRequest(
        thread_id="patch",
        turn=turn(approval=common_pb2.APPROVAL_POLICY_KIND_NEVER, cwd=str(cwd)),
        item=_patch_item(patch, call_id),
    )


def _snapshot(folder: Path) -> dict[str, bytes | None]:
    return {
        str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None)
        for p in sorted(folder.rglob("*"))
    }


def test_file_in_the_way_fails_cleanly(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "blocker").write_text("i am a file\n")
    (work / "keep.txt").write_text("unchanged\n")
    before = _snapshot(work)
    patch = (
        "*** Begin Patch\n*** Add File: blocker/inside.txt\n+hello\n"
        "*** Update File: keep.txt\n@@\n-unchanged\n+changed\n*** End Patch\n"
    )
    with running_router() as router:
        done = completed(execute(router.stub, _request(patch, work)))
    item = json.loads(done.output_item_json)
    assert item["type"] == "custom_tool_call_output" and item["call_id"] == "p1"
    assert not done.success
    assert "blocker" in done.output_text, done.output_text
    # Nothing written: the blocker is still the same file, no temp files appeared, and the
    # later hunk did not run after the failed one.
    assert _snapshot(work) == before, done.output_text


def test_file_size_limit_leaves_no_partial_file(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "small.txt").write_text("small\n")
    before = _snapshot(work)
    big_lines = "".join(f"+{'x' * 99}\n" for _ in range(2 * LIMIT // 100))
    add = f"*** Begin Patch\n*** Add File: big.txt\n{big_lines}*** End Patch\n"
    grow = f"*** Begin Patch\n*** Update File: small.txt\n@@\n small\n{big_lines}*** End Patch\n"
    with router_subprocess(["--log-level", "WARNING"]) as (proc, port):
        # The router writes patches itself: cap the size of any file it writes.
        resource.prlimit(proc.pid, resource.RLIMIT_FSIZE, (LIMIT, LIMIT))
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = router_pb2_grpc.ToolRouterServiceStub(channel)
            outcomes = [completed(execute(stub, _request(add, work, "a1")))]
            outcomes.append(completed(execute(stub, _request(grow, work, "a2"))))
            # The router survives and still applies patches that fit.
            fits = "*** Begin Patch\n*** Add File: ok.txt\n+fine\n*** End Patch\n"
            outcomes.append(completed(execute(stub, _request(fits, work, "a3"))))
        assert proc.poll() is None
    assert [o.success for o in outcomes] == [False, False, True], [o.output_text for o in outcomes]
    assert "Failed to write file big.txt" in outcomes[0].output_text
    assert "Failed to write file small.txt" in outcomes[1].output_text
    after = _snapshot(work)
    assert after.pop("ok.txt") == b"fine\n"
    assert after == before
