"""The `shellgate` command line: serve, call, project, eval, policy check."""
