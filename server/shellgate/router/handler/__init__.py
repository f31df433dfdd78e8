"""Handler stage (spec 02): tool call + turn → handler commands: environments, shells, cwd, permissions."""
