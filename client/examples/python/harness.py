"""A small harness loop with shellgate-client: exec_command, write_stdin polling, apply_patch.

    pip install shellgate-client
    python harness.py 127.0.0.1:50051 /some/work/dir

Prints each call's output text (what the model would read) and exits 0 when all succeeded.
"""

from __future__ import annotations

import sys

from shellgate.client import (
    Client,
    ClientError,
    Completed,
    Decision,
    apply_patch_item,
    exec_command_item,
    turn_context,
    write_stdin_item,
)

PATCH = """*** Begin Patch
*** Add File: hello.txt
+hello from apply_patch
*** End Patch"""


def main(target: str, workdir: str) -> int:
    """Run three calls on one thread; 1 when one of them did not succeed."""
    turn = turn_context(cwd=workdir, approval_policy="on-request",
                        permission_profile="danger-full-access")
    results: list[Completed] = []
    with Client(target) as client:
        info = client.wait_until_ready(timeout_s=30)
        print(f"router {info.version} ({info.instance_id})")
        # A command that outlives its yield time leaves a session to poll with write_stdin.
        done = client.run(exec_command_item("echo started; sleep 1; echo finished",
                                            yield_time_ms=250), turn)
        results.append(done)
        while done.session_id is not None:
            done = client.run(write_stdin_item(done.session_id, "", yield_time_ms=2000), turn)
            results.append(done)
        results.append(client.run(apply_patch_item(PATCH), turn,
                                  approver=lambda ask: Decision.APPROVED))
        try:
            client.end_thread()
        except ClientError as error:  # typed, with the router's stable reason
            print(f"end_thread: {error.code.name} {error.reason}", file=sys.stderr)
    for result in results:
        print(result.output_text)
    return 0 if all(result.success for result in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
