"""The operator web console (docs/console.md): login, environments, sessions, approvals, audit."""
