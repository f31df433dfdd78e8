"""The kernel both daemons share: errors and their status boundary, auth, gRPC helpers, env policy, sandbox, processes."""
