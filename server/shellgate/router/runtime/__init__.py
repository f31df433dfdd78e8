"""The router's runtime: threads, environments, and running the projected calls.

Unlike the pipeline stages next to it, this package does I/O (asyncio, processes, gRPC
clients); it consumes their frozen outputs and never feeds anything back into them.

* `execute`: the Execute stream driver (`execute_call`, `resume_call`);
* `call_runner`: runs one call inside that stream, element by element, and emits what
  each of its states means (approval_required, completed);
* `call_state`: the call's state machine in one file: element outcomes
  (Finished | Parked | Aborted), call states (Running | AwaitingApproval | Ended) and
  every transition;
* `orchestrator`: approval, sandbox choice, first attempt, sandbox-denial retry, written
  once for any `ToolRuntime` (Codex's `tools/orchestrator.rs`);
* `runtimes/`: the tool runtimes (Codex's `tools/runtimes/`): `classic` (shell_command),
  `unified_exec` (exec_command, write_stdin), `apply_patch`;
* `context`: what a runtime runs with (`RuntimeContext`, `RuntimeRequest`);
* `threads`, `sessions`, `unified_process`: a thread's approval cache, parked calls and
  unified-exec sessions; `store/`: their shared (in-memory or Redis) part;
* `spawn`, `registry`, `remote/`: environments: the spawn seam, the local one, daemons;
* `events`, `errors`, `sweeper`: domain events, RPC-status errors, the idle sweeper.
"""
