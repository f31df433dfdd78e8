"""One call: the Execute stream driver, its runner, state machine, orchestrator, output stream and idempotency ledger."""
