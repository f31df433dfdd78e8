"""The router's runtime: threads, environments, approvals and running the projected calls.

Unlike the pipeline stages next to it, this package does I/O (asyncio, processes, gRPC
clients); it consumes their frozen outputs and never feeds anything back into them. One
subpackage per concept (docs/architecture.md, "Where each concept lives"):

* `call/`: one call — `execute` (the Execute stream driver), `runner` (element by element),
  `state` (the call's state machine in one file), `orchestrator` (approval, sandbox,
  attempt, denial retry; Codex's `tools/orchestrator.rs`), `stream` (the client's bounded
  output), `ledger` (idempotent call ids), `context` (what a runtime runs with), `events`;
* `runtimes/`: the tool runtimes (Codex's `tools/runtimes/`): `classic` (shell_command),
  `unified_exec` (exec_command, write_stdin), `apply_patch`, `command`;
* `approvals/`: approvals as one concept — `vocabulary` (decisions, sources, routes,
  board statuses as StrEnums), `offer` (the one "on offer" check), `route` (the one route
  decision), `view` (the one place the operator's view is built and redacted), `board`,
  `operator_wait` (a waiting call), `desk`, `settings`, and `parked_codec` (a parked call
  as data);
* `threads/`: `registry`, per-thread `state`, unified-exec `sessions` (`unified_process`,
  `output_tap`; a `session_sharing` strategy chosen once per thread: in memory, or between
  replicas through `shared_sessions`, `shared_records` and `session_lease`), `tally`, `sweeper`;
* `environments/`: `registry` (the local one and daemons), `spawn` (the seam), `remote/`;
* `audit`: the records the orchestrator hands the audit log;
* `store/`: storage adapters only (in memory, Redis, the replica bus, record seals).

Rules (tests/unit/test_architecture.py): nothing here imports `service/` or `cli/`;
`store/` imports no flow (`call/`, `threads/`, `environments/`, `runtimes/`).
"""
